"""The per-stream scratch key (``backends.cuda.streams.stream_key``) on a stand-in for CuPy, so it
runs without a GPU: the per-thread default stream's shared handle is told apart by thread."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from pytropical_gpu.backends.cuda.streams import PER_THREAD, stream_key


def _cp(ptr: int, dev: int = 3):
    stream = SimpleNamespace(ptr=ptr)
    return SimpleNamespace(cuda=SimpleNamespace(get_current_stream=lambda: stream,
                                                runtime=SimpleNamespace(getDevice=lambda: dev)))


def _keys_from_two_threads(cp):
    keys = []
    threads = [threading.Thread(target=lambda: keys.append(stream_key(cp))) for _ in range(2)]
    for t in threads:
        t.start()
        t.join()  # one after the other: both threads are alive only in turn, ids may repeat
    return keys


def test_per_thread_default_streams_of_two_live_threads_get_two_keys():
    cp = _cp(PER_THREAD)
    keys, ready, done = [], threading.Barrier(2), threading.Event()

    def work():
        keys.append(stream_key(cp))
        ready.wait()
        done.wait()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    while len(keys) < 2:
        pass
    done.set()
    for t in threads:
        t.join()
    assert keys[0][:2] == keys[1][:2] == (3, PER_THREAD)
    assert keys[0] != keys[1]


def test_other_streams_are_named_by_their_handle_alone():
    for ptr in (0, 1, 0x7F00DEAD):
        keys = _keys_from_two_threads(_cp(ptr))
        assert keys[0] == keys[1] == (3, ptr, 0)


def test_the_callers_device_id_is_used_when_given():
    assert stream_key(_cp(5), dev=7) == (7, 5, 0)
    assert stream_key(_cp(5)) == (3, 5, 0)
