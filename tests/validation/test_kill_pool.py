"""``kill_pool`` leaves no manager thread running: CPython's exit hook then has nothing to
wake (a live one races the close of its wake-up pipe: ``OSError: Bad file descriptor``)."""

import time

from fedsim.validation.montecarlo_backends import kill_pool, new_pool


def test_kill_pool_joins_the_manager_thread():
    ex = new_pool(1)
    ex.submit(time.sleep, 30)  # a busy worker, as at a Ctrl-C
    time.sleep(0.5)
    manager = ex._executor_manager_thread
    assert manager is not None and manager.is_alive()
    kill_pool(ex)
    # shutdown(wait=False) drops the executor's reference; kill_pool must have joined first
    assert not manager.is_alive()
