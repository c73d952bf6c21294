"""ConvLSTM1D / ConvLSTM2D / ConvLSTM3D: an LSTM whose input and recurrent transforms are convolutions
(keras/src/layers/rnn/conv_lstm.py), run step by step from the convolution and elementwise ops.

Per step t, with x_t of shape [batch, (height,) width, channels]:
    z = conv(x_t, kernel, strides, padding, dilation) + bias + conv(h, recurrent_kernel, "same")
    i, f, c~, o = the four gates of z (its channels in that order, `filters` each)
    c = rec_act(f) * c + rec_act(i) * act(c~);  h = rec_act(o) * act(c)
from zero states. A 1D layer runs as 2D over a single row; a 3D layer runs shaders/conv3d.comp.
Masks, stateful layers and channels_first are refused at load.
"""
from __future__ import annotations

import numpy as np

from ...ops import conv, conv3d, creation, elementwise, layout, merge, slicing
from ...tensors import ownership
from ...tensors.tensor import view
from .. import activation_functions, config_values
from ..base import Layer, register

_DEFAULT_RECURRENT_ACTIVATION = {2: "hard_sigmoid", 3: "sigmoid"}


class _ConvLSTM(Layer):
    spatial_rank = 2
    # Keras applies a mask step by step here; kerasgl does not: a mask reaching it is refused
    # at load (refuses_mask).
    mask_behaviour = "consumes"
    keras_call_takes_mask = True
    shaders = ("conv2d.comp", "binary.comp", "unary.comp", "strided_slice.comp", "concat.comp")

    @classmethod
    def weight_count(cls, config):
        return 2 + bool(config.get("use_bias", True))    # kernel, recurrent kernel (+ bias)

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        r = self.spatial_rank
        self.filters = config_values.positive_int(self, "filters")
        self.kernel_size = config_values.int_tuple(self, "kernel_size", r)
        self.strides = config_values.int_tuple(self, "strides", r, 1)
        self.dilation = config_values.int_tuple(self, "dilation_rate", r, 1)
        self.padding = config_values.choice(self, "padding", ("valid", "same"), "valid")
        if (self.option("data_format") or "channels_last") != "channels_last":
            raise self.unsupported("data_format='channels_first'")
        flag = config_values.flag
        self.use_bias = flag(self, "use_bias", True)
        self.return_sequences = flag(self, "return_sequences", False)
        self.return_state = flag(self, "return_state", False)
        self.go_backwards = flag(self, "go_backwards", False, passed_to_backend=True)
        if flag(self, "stateful", False):
            raise self.unsupported("stateful=True")
        where = f"Layer '{self.name}' ({self.class_name})"
        self.act = self._pointwise("activation", "tanh", where)
        self.rec_act = self._pointwise("recurrent_activation",
                                       _DEFAULT_RECURRENT_ACTIVATION[keras_major], where)
        self.expect_weights(3 if self.use_bias else 2)
        kernel, recurrent = self.weights_np[0], self.weights_np[1]
        self.in_channels = kernel.shape[-2] if kernel.ndim == r + 2 else None
        if kernel.shape != self.kernel_size + (self.in_channels, 4 * self.filters) \
                or recurrent.shape != self.kernel_size + (self.filters, 4 * self.filters) \
                or (self.use_bias and self.weights_np[2].shape != (4 * self.filters,)):
            raise self.shape_error(
                f"weights of shapes {[tuple(w.shape) for w in self.weights_np]} do not fit "
                f"kernel_size {self.kernel_size} and {self.filters} filters.")

    def refuses_mask(self, keras_major: int) -> bool:
        return True

    def _pointwise(self, key, default, where):
        value = config_values.activation(self, key, default)
        fn = activation_functions.pointwise(value, self.keras_major, where)
        if fn is None:
            raise self.unsupported(f"{key}={activation_functions.activation_name(value)!r}")
        return fn

    # -- shapes ------------------------------------------------------------------------------------
    def _conv_dims(self, values):
        return (1,) + tuple(values) if self.spatial_rank == 1 else tuple(values)

    def output_spatial(self, spatial) -> tuple:
        return tuple(None if size is None else conv.conv_padding(size, k, s, d, self.padding)[0]
                     for size, k, s, d in zip(spatial, self.kernel_size, self.strides,
                                              self.dilation))

    def compute_output_shape(self, input_shape, *rest):
        if len(input_shape) != self.spatial_rank + 3:
            raise self.shape_error(f"expects inputs of rank {self.spatial_rank + 3} (batch, time, "
                                   f"*spatial, channels). Received {tuple(input_shape)}.")
        if input_shape[-1] is not None and input_shape[-1] != self.in_channels:
            raise self.shape_error(f"expects {self.in_channels} input channels. Received input "
                                   f"shape {tuple(input_shape)}.")
        batch, steps = input_shape[0], input_shape[1]
        state = (batch,) + self.output_spatial(input_shape[2:-1]) + (self.filters,)
        output = (batch, steps) + state[1:] if self.return_sequences else state
        return [output, state, state] if self.return_state else output

    def build(self, input_shape, *rest):
        kernel, recurrent = (np.asarray(w, np.float32) for w in self.weights_np[:2])
        bias = np.asarray(self.weights_np[2], np.float32) if self.use_bias else None
        if self.spatial_rank == 1:
            kernel, recurrent = kernel[None], recurrent[None]
        pack = conv3d.pack_conv3d if self.spatial_rank == 3 else conv.pack_conv
        self.kernel = pack(kernel, bias, 1, self.upload)
        self.recurrent_kernel = pack(recurrent, None, 1, self.upload)
        self.built = True

    def _conv(self, x, kernel, strides, dilation, padding):
        convolve = conv3d.conv3d if self.spatial_rank == 3 else conv.conv2d
        return convolve(x, kernel, strides, dilation, padding)

    # -- running -----------------------------------------------------------------------------------
    def call(self, sequences, initial_state=None, mask=None, training=None, **kwargs):
        if isinstance(sequences, (list, tuple)):
            sequences, initial_state = sequences[0], list(sequences[1:]) or initial_state
        if initial_state:
            raise self.unsupported("initial_state")
        return ownership.tidy.run(self._run, sequences)

    def _run(self, x):
        batch, steps = x.shape[0], x.shape[1]
        spatial_in = self._conv_dims(x.shape[2:-1])
        k2, s2, d2 = self._conv_dims(self.kernel_size), self._conv_dims(self.strides), \
            self._conv_dims(self.dilation)
        geometry = [conv.conv_padding(n, k, s, d, self.padding)
                    for n, k, s, d in zip(spatial_in, k2, s2, d2)]
        out_hw = tuple(g[0] for g in geometry)
        pads = tuple((g[1], g[2]) for g in geometry)
        same = tuple(conv.conv_padding(n, k, 1, 1, "same")[1:] for n, k in zip(out_hw, k2))
        ones = (1,) * len(out_hw)
        state_shape = (batch,) + out_hw + (self.filters,)
        h = creation.zeros(state_shape)
        c = creation.zeros(state_shape)
        frame_shape = (batch,) + spatial_in + (self.in_channels,)
        outputs = []
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        for t in order:
            window = [(0, batch, 1), (t, 1, 1)] + [(0, n, 1) for n in x.shape[2:]]
            frame = slicing.strided_slice(x, window)          # [batch, 1, *spatial, channels]
            z = elementwise.add(
                self._conv(view(frame, frame_shape), self.kernel, s2, d2, pads),
                self._conv(h, self.recurrent_kernel, ones, ones, same))
            gates = [self._gate(z, g) for g in range(4)]
            i, f = self._apply(self.rec_act, gates[0]), self._apply(self.rec_act, gates[1])
            o = self._apply(self.rec_act, gates[3])
            c = elementwise.add(elementwise.mul(f, c),
                                elementwise.mul(i, self._apply(self.act, gates[2])))
            h = elementwise.mul(o, self._apply(self.act, c))
            if self.return_sequences:
                outputs.append(h)
        if self.return_sequences:
            step_shape = (batch, 1) + state_shape[1:]
            stacked = merge.concatenate([view(o, step_shape) for o in outputs], axis=1)
            output = self._unrow(stacked, (batch, steps) + state_shape[1:])
        else:
            # The last h is also the first state: a copy, so that each output owns its memory.
            output = self._unrow(layout.copy(h) if self.return_state else h, state_shape)
        if self.return_state:
            return [output, self._unrow(h, state_shape), self._unrow(c, state_shape)]
        return output

    def _gate(self, z, g):
        window = [(0, n, 1) for n in z.shape[:-1]] + [(g * self.filters, self.filters, 1)]
        return slicing.strided_slice(z, window)

    @staticmethod
    def _apply(fn, x):
        return elementwise.unary(fn.function[len("act_"):], x, *fn.params)

    def _unrow(self, x, shape):
        """x with the 1D layer's single row removed (ConvLSTM1D: a copy), else x itself."""
        if self.spatial_rank != 1:
            return x
        return layout.copy(view(x, tuple(n for i, n in enumerate(shape)
                                         if i != len(shape) - 3)))


@register("ConvLSTM2D")
class ConvLSTM2D(_ConvLSTM):
    spatial_rank = 2


@register("ConvLSTM3D")
class ConvLSTM3D(_ConvLSTM):
    spatial_rank = 3
    shaders = ("conv3d.comp", "binary.comp", "unary.comp", "strided_slice.comp", "concat.comp")


@register("ConvLSTM1D")
class ConvLSTM1D(_ConvLSTM):
    spatial_rank = 1
