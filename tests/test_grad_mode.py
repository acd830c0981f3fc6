"""Grad mode flags (read by the autograd tape): context managers, decorators, threads."""

import threading

import jflow as flow


def test_no_grad_and_enable_grad_nest() -> None:
    assert flow.is_grad_enabled()
    with flow.no_grad():
        assert not flow.is_grad_enabled()
        with flow.enable_grad():
            assert flow.is_grad_enabled()
        assert not flow.is_grad_enabled()
    assert flow.is_grad_enabled()


def test_decorator_and_set_grad_enabled() -> None:
    @flow.no_grad()
    def f() -> bool:
        return flow.is_grad_enabled()

    assert f() is False and flow.is_grad_enabled()
    with flow.set_grad_enabled(False):
        assert not flow.is_grad_enabled()
    assert flow.is_grad_enabled()
    flow.set_grad_enabled(False)
    assert not flow.is_grad_enabled()
    flow.set_grad_enabled(True)
    assert flow.is_grad_enabled()


def test_grad_mode_is_thread_local() -> None:
    seen = []
    with flow.no_grad():
        t = threading.Thread(target=lambda: seen.append(flow.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_set_grad_enabled_rejects_non_bool() -> None:
    import pytest
    with pytest.raises(TypeError, match="set_grad_enabled"):
        flow.set_grad_enabled(1)
