"""Keras's recurrent layers (keras/src/layers/rnn): SimpleRNN, LSTM, GRU, RNN over cells, the cells
called alone, ConvLSTM1D/2D/3D, Bidirectional and TimeDistributed.
Importing this package registers its layer classes."""
from . import cells  # noqa: F401
from . import conv_lstm  # noqa: F401
from . import recurrent  # noqa: F401
from . import wrappers  # noqa: F401
