"""KerasHub models as kerasgl Models, and the table of the architectures this package builds.

A KerasHub model is built from its hyperparameters by its architecture module (gpt2.py,
bert.py, ...) as a graph of kerasgl layers (functional.py), then loaded as any kerasgl model:
predict, `model(x)`, summary, get_layer, plans, memory accounting and profiling work as for a
Keras file. An architecture or option this package does not build is refused here, at load,
naming it (UnsupportedLayerError).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import ModelFileError, UnsupportedLayerError
from ..layers.custom import custom_layer
from ..model import Model
from ..saving.config import normalize_dtype
from ..saving.spec import ModelSpec
from .files import HubFiles, hub_class, hyperparameters
from .gated_decoder import GatedDecoder
from .position_embedding import PositionEmbedding
from .rms_norm import ScaledRMSNorm
from .tokenizer import read as read_tokenizer
from .transformer_decoder import TransformerDecoder
from .transformer_encoder import TransformerEncoder
from .vit_layers import ClassToken, ViTEncoderBlock

# The KerasHub layer classes a built graph names (KerasHub's class names), resolved as custom
# classes are during a load.
HUB_LAYERS: dict[str, type] = {
    "PositionEmbedding": PositionEmbedding, "TransformerDecoder": TransformerDecoder,
    "TransformerEncoder": TransformerEncoder, "LlamaTransformerDecoder": GatedDecoder,
    "MistralTransformerDecoder": GatedDecoder, "GemmaDecoderBlock": GatedDecoder,
    "LlamaLayerNorm": ScaledRMSNorm, "MistralLayerNormalization": ScaledRMSNorm,
    "RMSNormalization": ScaledRMSNorm, "ClassToken": ClassToken,
    "ViTEncoderBlock": ViTEncoderBlock}


class HubModel(Model):
    """A KerasHub backbone or task, its weights on the GPU until dispose()."""
    hub_class: str = ""
    hyperparameters: dict = {}
    tokenizer_folder: str | None = None     # a preset folder holding the model's tokenizer
    preprocessor: dict | None = None        # its preprocessor's hyperparameters (preprocessor.json)

    @property
    def tokenizer(self):
        """The preset's tokenizer (kerasgl.kerashub.tokenizer.Tokenizer), read on first use (its
        libraries are the kerashub extra); None for a model saved without one."""
        if self.tokenizer_folder is None:
            return None
        if getattr(self, "_tokenizer", None) is None:
            self._tokenizer = read_tokenizer(self.tokenizer_folder)
        return self._tokenizer

    def __repr__(self) -> str:
        state = "disposed" if self.is_disposed else f"{len(self.layers)} layers"
        return f"<kerasgl KerasHub {self.hub_class} '{self.name}' ({state})>"


@dataclass(frozen=True)
class Architecture:
    """How to build one KerasHub class: `build(files) -> ModelSpec`, as a `model_class`."""
    build: Callable[[HubFiles], ModelSpec]
    model_class: type = HubModel


ARCHITECTURES: dict[str, Architecture] = {}


def architecture(*class_names: str, model_class: type = HubModel):
    """Decorator: this function builds these KerasHub classes' graphs."""
    def decorate(build):
        for name in class_names:
            ARCHITECTURES[name] = Architecture(build, model_class)
        return build
    return decorate


def build_model(files: HubFiles, storage_dtype: str = "float32") -> HubModel:
    """The kerasgl model for a KerasHub model's files (weights uploaded; the large weight
    matrices stored as load_model's storage_dtype asks)."""
    found = ARCHITECTURES.get(files.class_name)
    if found is None:
        raise UnsupportedLayerError(
            f"{files.source}: the KerasHub class {files.class_name} is not supported; kerasgl "
            f"builds {', '.join(sorted(ARCHITECTURES))}.")
    spec = found.build(files)
    with custom_layer.using(HUB_LAYERS):
        model = found.model_class.from_spec(spec, storage_dtype=storage_dtype)
    model.hub_class = files.class_name
    model.hyperparameters = dict(hyperparameters(files.backbone_config, files.source))
    model.tokenizer_folder, model.preprocessor = files.tokenizer_folder, files.preprocessor
    return model


def model_name(files: HubFiles) -> str:
    """The name KerasHub gave the model (its config's), as Keras reports it."""
    return str(hyperparameters(files.config, files.source).get("name") or files.class_name)


def positive(value) -> bool:
    """An option that must be a positive integer (a size)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def options(files: HubFiles, config: dict, supported: dict) -> dict:
    """The hyperparameters of `config` (the backbone's or a task's), after refusing every one
    whose value is not one `supported` allows: name -> a predicate on the value, or a tuple of
    values. The dtype policy must compute in float32, as kerasgl does."""
    values = hyperparameters(config, files.source)
    what = hub_class(config)
    try:
        dtype, quantization = normalize_dtype(values.get("dtype"))
    except ValueError as exc:
        raise ModelFileError(f"{files.source}: {what}: {exc}") from exc
    if dtype != "float32" or quantization:
        raise UnsupportedLayerError(f"{files.source}: {what} with dtype {dtype!r}"
                                    f"{' quantized ' + quantization if quantization else ''} is "
                                    "not supported (kerasgl computes in float32; save the model "
                                    "with dtype='float32').")
    for name, allowed in supported.items():
        value = values.get(name)
        fits = allowed(value) if callable(allowed) else value in allowed
        if not fits:
            raise UnsupportedLayerError(f"{files.source}: {what} with {name}={value!r} is not "
                                        "supported.")
    return values
