"""Which EGL device is the GPU a scheduler gave this process (kerasgl/runtime/egl_devices.py):
the pure choice on made-up device lists (NVIDIA with and without the CUDA mask applied, Mesa
render nodes, no GPU given) and on the list this machine's driver reports, and `kerasgl info`
saying which device and why."""
import pytest

from kerasgl import cli
from kerasgl.runtime import context, egl_devices
from kerasgl.runtime.egl_devices import EGLDevice, choose

NV = ("EGL_NV_device_cuda", "EGL_EXT_device_drm")
SOFTWARE = EGLDevice(index=0, extensions=("EGL_MESA_device_software",
                                          "EGL_EXT_device_drm_render_node"))


def nvidia(index, cuda):
    return EGLDevice(index=index, extensions=NV, cuda_device=cuda, drm_file=f"/dev/dri/card{index}")


def mesa(index, minor):
    return EGLDevice(index=index, extensions=("EGL_EXT_device_drm", "EGL_EXT_device_drm_render_node"),
                     drm_file=f"/dev/dri/card{minor - 128}", render_node=f"/dev/dri/renderD{minor}")


def test_nothing_assigned_keeps_the_default():
    chosen = choose([nvidia(0, 0), nvidia(1, 1)], {})
    assert chosen.index is None and "CUDA_VISIBLE_DEVICES unset" in chosen.reason


def test_nvidia_with_the_mask_applied_picks_cuda_device_0():
    # CUDA_VISIBLE_DEVICES=2 on four GPUs: the driver numbers only the visible one, as 0.
    devices = [nvidia(0, None), nvidia(1, None), nvidia(2, 0), nvidia(3, None)]
    chosen = choose(devices, {"CUDA_VISIBLE_DEVICES": "2"})
    assert chosen.index == 2
    assert "CUDA device 0" in chosen.reason and "EGL_NV_device_cuda" in chosen.reason
    # Two visible, listed in reverse: the first listed is CUDA device 0.
    both = choose([nvidia(0, 1), nvidia(1, 0)], {"CUDA_VISIBLE_DEVICES": "1,0"})
    assert both.index == 1


def test_nvidia_numbering_every_gpu_picks_the_listed_number():
    devices = [nvidia(0, 0), nvidia(1, 1), nvidia(2, 3), nvidia(3, 2)]     # EGL order != CUDA's
    chosen = choose(devices, {"CUDA_VISIBLE_DEVICES": "2"})
    assert chosen.index == 3 and "unmasked" in chosen.reason


def test_render_nodes_in_order_when_no_cuda_answer():
    devices = [SOFTWARE, mesa(1, 129), mesa(2, 128)]
    assert choose(devices, {"CUDA_VISIBLE_DEVICES": "0"}).index == 2          # renderD128
    second = choose(devices, {"HIP_VISIBLE_DEVICES": "1"})
    assert second.index == 1 and "/dev/dri/renderD129" in second.reason
    assert choose(devices, {"ROCR_VISIBLE_DEVICES": "0,1"}).index == 2


def test_no_gpu_given_means_the_software_device():
    for value in ("", "-1", "NoDevFiles"):
        chosen = choose([nvidia(0, 0), EGLDevice(index=1, extensions=SOFTWARE.extensions)],
                        {"CUDA_VISIBLE_DEVICES": value})
        assert chosen.index == 1 and "no GPU" in chosen.reason
    none = choose([nvidia(0, 0)], {"CUDA_VISIBLE_DEVICES": ""})
    assert none.index is None and "no software EGL device" in none.reason


def test_an_unmatched_assignment_says_so():
    chosen = choose([SOFTWARE, mesa(1, 128)], {"CUDA_VISIBLE_DEVICES": "GPU-3f2a9c"})
    assert chosen.index is None and "no EGL device matches GPU 'GPU-3f2a9c'" in chosen.reason
    beyond = choose([SOFTWARE, mesa(1, 128)], {"CUDA_VISIBLE_DEVICES": "4"})
    assert beyond.index is None and "EGL device 1 (/dev/dri/renderD128)" in beyond.reason


def test_the_devices_this_driver_reports():
    found = egl_devices.devices()
    assert [d.index for d in found] == list(range(len(found)))
    assert choose(found, {}).index is None
    software = [d.index for d in found if d.software]
    chosen = choose(found, {"CUDA_VISIBLE_DEVICES": ""})
    assert chosen.index == (software[0] if software else None)
    assigned = choose(found, {"CUDA_VISIBLE_DEVICES": "0"})
    assert assigned.index is None or 0 <= assigned.index < len(found)


def test_named_devices_come_first_and_info_says_why(monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    expected = choose(egl_devices.devices(), {"CUDA_VISIBLE_DEVICES": ""})
    assert context.device_choice() == expected
    monkeypatch.setenv("KERASGL_EGL_DEVICE", "0")
    named = context.device_choice()
    assert named.index == 0 and named.reason == "KERASGL_EGL_DEVICE=0"
    monkeypatch.delenv("KERASGL_EGL_DEVICE")
    assert cli.main(["info"]) == 0
    assert f"device choice: {expected.reason}" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "1,2"])
def test_choice_never_fails_on_this_machine(value):
    chosen = choose(egl_devices.devices(), {"CUDA_VISIBLE_DEVICES": value})
    assert chosen.reason.startswith(f"CUDA_VISIBLE_DEVICES={value!r}")
