_state = {}


class _Work:
    def wait(self):
        return True


def init_process_group(backend, init_method, rank, world_size, device_id=None):
    assert init_method.startswith("tcp://") and ":" in init_method[6:], init_method
    assert 0 <= rank < world_size
    _state.update(backend=backend, rank=rank, world_size=world_size)


def is_initialized():
    return bool(_state)


def barrier(async_op=False):
    assert _state, "barrier before init_process_group"
    return _Work() if async_op else None


def all_reduce(tensor, async_op=False):
    assert _state, "all_reduce before init_process_group"
    return _Work() if async_op else None


def destroy_process_group():
    _state.clear()
