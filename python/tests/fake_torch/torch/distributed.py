import socket
import threading
import time

_state = {}

# torch's TCP store: the master listens once its server has started; a client whose connection is refused backs
# off before it retries (torch's client does, with a longer and jittered delay). Both are modelled so that a probe
# that lets a client race the master's start pays the back-off, as it would with the real torch.
MASTER_START_S = 0.1
CLIENT_BACKOFF_S = 0.5


class TCPStore:
    def __init__(self, host_name, port, world_size=None, is_master=False, timeout=None, wait_for_workers=True):
        self.host, self.world_size = host_name, world_size
        if is_master:
            time.sleep(MASTER_START_S)
            self._server = socket.create_server((host_name, port))
            self.port = self._server.getsockname()[1]
            threading.Thread(target=self._accept, daemon=True).start()
        else:
            self.port = port
            deadline = time.monotonic() + 30
            while True:
                try:
                    self._conn = socket.create_connection((host_name, port), timeout=5)
                    break
                except ConnectionRefusedError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(CLIENT_BACKOFF_S)

    def _accept(self):
        while True:
            conn, _ = self._server.accept()
            conn.close()


class group:
    """torch.distributed.group: WORLD is the default process group object while one exists (a new one each
    init_process_group), None otherwise."""

    WORLD = None


class _Work:
    def wait(self):
        return True


# Tests set INIT_DELAY_S to make init_process_group take a while, as the real one does (a rendezvous, NCCL's
# init), and count its calls in init_calls.
INIT_DELAY_S = 0.0
init_calls = []


def init_process_group(backend, init_method=None, rank=-1, world_size=-1, store=None, device_id=None):
    init_calls.append(threading.current_thread().name)
    assert 0 <= rank < world_size
    if _state:
        raise RuntimeError("trying to initialize the default process group twice!")  # as torch says it
    time.sleep(INIT_DELAY_S)
    if store is None:
        assert init_method.startswith("tcp://") and ":" in init_method[6:], init_method
        host, port = init_method[6:].rsplit(":", 1)
        store = TCPStore(host, int(port), world_size, rank == 0)
    _state.update(
        backend=backend,
        rank=rank,
        world_size=world_size,
        store=store,
        device_id=device_id,
        init_thread=threading.current_thread().name,
    )
    group.WORLD = object()


def is_initialized():
    return bool(_state)


def barrier(async_op=False):
    assert _state, "barrier before init_process_group"
    return _Work() if async_op else None


def all_reduce(tensor, group=None, async_op=False):
    assert _state, "all_reduce before init_process_group"
    _state.setdefault("collectives", []).append("all_reduce")
    return _Work() if async_op else None


def all_gather_into_tensor(output, input, group=None, async_op=False):
    assert _state, "all_gather before init_process_group"
    return _Work() if async_op else None


def reduce_scatter_tensor(output, input, group=None, async_op=False):
    assert _state, "reduce_scatter before init_process_group"
    return _Work() if async_op else None


def broadcast(tensor, src=0, group=None, async_op=False):
    assert _state, "broadcast before init_process_group"
    return _Work() if async_op else None


def isend(tensor, dst):
    return _Work()


def irecv(tensor, src):
    return _Work()


class P2POp:
    def __init__(self, op, tensor, peer):
        self.op, self.tensor, self.peer = op, tensor, peer


def batch_isend_irecv(ops):
    assert _state, "send/recv before init_process_group"
    return [_Work() for _ in ops]


def destroy_process_group():
    _state.clear()
    group.WORLD = None
