"""What a real GPU runs, run here: a selection of the kernel, layer and model tests in a process
of their own under KERASGL_DEVICE_POLICY=plain, the policy and generic tuning every driver but
llvmpipe gets (tiled GEMMs, implicit-GEMM convolutions, work groups of 64 and more, storage
buffer reads), so that each kernel variant a GPU picks is compared with numpy and Keras in CI
too, on llvmpipe. With an empty cache folder: no tuning measured here applies.

SELECTION covers every variant the generic tuning picks: matmul.comp and matmul_tiled.comp
(test_matmul), conv_gemm.comp and conv2d.comp on matrix-layout weights, depthwise and
transposed convolutions (test_layers_conv), conv3d.comp on its packed weights and ConvLSTMs
(test_layers_3d, test_layers_conv_recurrent), pooling read from storage buffers
(test_layers_pooling), tensors in textures read and written in place by the element-wise,
per-channel, pooling and padding kernels (test_texture_operands), whole models against Keras
(test_whole_models: MobileNetV2 and ResNet50, small inputs), float16 weights read by the
generic tuning's kernels (test_storage_float16: its tests that keep the device's tuning), and the
work-group checks of plain_policy_checks.py. About two minutes on CI's 2 cores."""
import os
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
SELECTION = ["plain_policy_checks.py", "test_matmul.py", "test_layers_conv.py",
             "test_layers_3d.py", "test_layers_conv_recurrent.py", "test_layers_pooling.py",
             "test_texture_operands.py",
             "test_whole_models.py::test_application_matches_keras[MobileNetV2]",
             "test_whole_models.py::test_application_matches_keras[ResNet50]",
             "test_storage_float16.py::test_einsum_dense",
             "test_storage_float16.py::test_embedding_tables",
             "test_storage_float16.py::test_small_cnn",
             "test_storage_float16.py::test_plans_record_and_replay_the_half_variants",
             "test_activations_float16.py"]
TIMEOUT_S = 1200


def test_kernel_layer_and_model_tests_pass_under_the_plain_policy(tmp_path):
    env = dict(os.environ, KERASGL_DEVICE_POLICY="plain", XDG_CACHE_HOME=str(tmp_path))
    env.pop("KERASGL_TUNING", None)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         *(os.path.join(TESTS, name) for name in SELECTION)],
        cwd=os.path.dirname(TESTS), env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
    assert result.returncode == 0, tail
    assert " passed" in tail and "skipped" not in tail.split("\n")[-1], tail
