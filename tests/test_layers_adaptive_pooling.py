"""AdaptiveAveragePooling1D/2D/3D and AdaptiveMaxPooling1D/2D/3D against Keras 3 (.keras, .h5):
bins that divide evenly, that overlap (output_size not dividing the input), output larger than the
input, both data formats, channels that do and do not divide by 4."""
import pytest
from keras_ref import assert_matches_keras, keras

L = keras.layers


@pytest.mark.parametrize("kind", ["Average", "Max"])
@pytest.mark.parametrize("dims,input_shape,kwargs", [
    (1, (12, 3), dict(output_size=4)), (1, (10, 4), dict(output_size=3)),
    (1, (5, 8), dict(output_size=7)),
    (1, (3, 10), dict(output_size=4, data_format="channels_first")),
    (2, (7, 9, 3), dict(output_size=(3, 4))), (2, (8, 8, 4), dict(output_size=2)),
    (2, (3, 7, 5), dict(output_size=(2, 3), data_format="channels_first")),
    (2, (4, 5, 2), dict(output_size=(6, 7))),
    (3, (5, 6, 7, 2), dict(output_size=(2, 4, 3))),
    (3, (2, 5, 4, 6), dict(output_size=(3, 2, 4), data_format="channels_first")),
])
def test_adaptive_pooling(kind, dims, input_shape, kwargs, tmp_path):
    layer = getattr(L, f"Adaptive{kind}Pooling{dims}D")(**kwargs)
    model = keras.Sequential([keras.Input(input_shape), layer], name="adaptive")
    assert_matches_keras(model, tmp_path)
