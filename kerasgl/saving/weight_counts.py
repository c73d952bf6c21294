"""How many weight arrays a layer's config implies, for the layers where that is certain.

Used only to reject files whose weights do not match their config with a message that names the
layer, before any layer code runs. Layers not listed (or configs with options that add weights,
such as LoRA or quantization) return None: no check, the layer code checks shapes itself.
"""
from __future__ import annotations

_NO_WEIGHTS = {
    "InputLayer", "Activation", "Flatten", "Reshape", "Permute", "RepeatVector", "Dropout",
    "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise",
    "GaussianDropout", "AlphaDropout", "ActivityRegularization", "Masking", "Lambda",
    "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D", "AveragePooling2D",
    "AveragePooling3D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
    "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D",
    "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "Dot",
    "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "Cropping1D", "Cropping2D", "Cropping3D",
    "UpSampling1D", "UpSampling2D", "UpSampling3D", "ReLU", "LeakyReLU", "ELU", "Softmax",
    "ThresholdedReLU", "TFOpLambda", "SlicingOpLambda",
}

# kernel (+ bias when use_bias)
_KERNEL_AND_BIAS = {
    "Dense", "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
    "Conv3DTranspose", "DepthwiseConv1D", "DepthwiseConv2D",
}
# depthwise + pointwise kernels (+ bias)
_SEPARABLE = {"SeparableConv1D", "SeparableConv2D"}
# kernel, recurrent kernel (+ bias)
_RECURRENT = {"SimpleRNN", "LSTM", "GRU", "SimpleRNNCell", "LSTMCell", "GRUCell"}


def _extra_weight_options(config: dict) -> bool:
    return bool(config.get("lora_rank")) or "quantization_mode" in config \
        or bool(config.get("quantization_config"))


def expected_weight_count(class_name: str, config: dict) -> int | None:
    if _extra_weight_options(config):
        return None
    use_bias = int(bool(config.get("use_bias", True)))
    if class_name in _NO_WEIGHTS:
        return 0
    if class_name in _KERNEL_AND_BIAS:
        return 1 + use_bias
    if class_name in _SEPARABLE:
        return 2 + use_bias
    if class_name in _RECURRENT:
        return 2 + use_bias
    if class_name == "BatchNormalization":
        return int(bool(config.get("scale", True))) + int(bool(config.get("center", True))) + 2
    if class_name == "Embedding":
        return 1
    if class_name == "PReLU":
        return 1
    if class_name in ("TimeDistributed", "Bidirectional"):
        inner = config.get("layer")
        if not isinstance(inner, dict) or not isinstance(inner.get("config"), dict):
            return None
        count = expected_weight_count(inner.get("class_name"), inner["config"])
        if count is None:
            return None
        return 2 * count if class_name == "Bidirectional" else count
    return None
