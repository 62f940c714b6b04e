"""A TCP proxy per holder in front of the API server, so the chaos can cut one holder off
from it (a network partition) while everything else still reaches it.

While a route is cut nothing moves through it in either direction, and new connections are
accepted but not carried on: the holder's requests hang as they do behind a partition (no
error, no reset) and what was already sent waits. When the route is restored everything
held back flows on, as after a healed partition. One thread serves every route with
`selectors`; writes never block it (a paused holder that stops reading only fills its own
buffer, and its upstream is no longer read once that buffer is full).
"""

import selectors
import socket
import threading

CHUNK = 65536
MAX_BUFFERED = 1 << 20  # stop reading a side while this much waits to be written to the other


class _Pipe:
    """One accepted connection, its upstream connection, and what waits to be written to each."""

    def __init__(self, route, downstream):
        self.route = route
        self.down = downstream
        self.up = None
        self.pending = {}  # socket -> bytearray still to be written to it
        self.ended = False  # one side closed: the pipe closes once the other has its bytes
        self.closed = False

    def peer(self, sock):
        return self.up if sock is self.down else self.down


class ApiProxy:
    """Routes 127.0.0.1:<port> to `target` ("host:port"). `add_route(name)` opens a route and
    returns its port; `cut(name)` partitions it and `restore(name)` heals it."""

    def __init__(self, target):
        host, _, port = target.rpartition(":")
        self.target = (host, int(port))
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._pending_actions = []
        self._routes = {}  # name -> {"listener", "cut", "pipes"}; touched only by the serving thread
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, ("wake", None))
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    # --- control, from any thread -----------------------------------------------------
    def add_route(self, name):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        listener.setblocking(False)

        def register():
            self._routes[name] = {"listener": listener, "cut": False, "pipes": []}
            self._selector.register(listener, selectors.EVENT_READ, ("accept", name))

        self._call(register)
        return listener.getsockname()[1]

    def cut(self, name):
        self._call(lambda: self._set_cut(name, True))

    def restore(self, name):
        self._call(lambda: self._set_cut(name, False))

    def stop(self):
        self._stopping = True
        self._wake()
        self._thread.join(timeout=5)

    def _call(self, action):
        """Runs `action` on the serving thread (the selector is not thread-safe), waits, and
        raises here what it raised there."""
        done = threading.Event()
        failure = []
        with self._lock:
            self._pending_actions.append((action, done, failure))
        self._wake()
        if not done.wait(timeout=10):
            raise RuntimeError("the API proxy did not answer")
        if failure:
            raise failure[0]

    def _wake(self):
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    # --- the serving thread ------------------------------------------------------------
    def _serve(self):
        while not self._stopping:
            for key, events in self._selector.select(timeout=1.0):
                kind, what = key.data
                if kind == "wake":
                    self._run_actions()
                elif kind == "accept":
                    self._accept(what)
                else:
                    self._transfer(what, key.fileobj, events)
        for route in self._routes.values():
            route["listener"].close()
            for pipe in list(route["pipes"]):
                self._close(pipe)

    def _run_actions(self):
        try:
            self._wake_r.recv(4096)
        except OSError:
            pass
        with self._lock:
            actions, self._pending_actions = self._pending_actions, []
        for action, done, failure in actions:
            try:
                action()
            except Exception as e:  # the caller's mistake: its thread raises it, this one serves on
                failure.append(e)
            finally:
                done.set()

    def _set_cut(self, name, cut):
        route = self._routes[name]
        route["cut"] = cut
        for pipe in list(route["pipes"]):
            if not cut and pipe.up is None:
                self._connect(pipe)
            self._update_interest(pipe)

    def _accept(self, name):
        route = self._routes[name]
        try:
            downstream, _ = route["listener"].accept()
        except OSError:
            return
        downstream.setblocking(False)
        pipe = _Pipe(name, downstream)
        pipe.pending[downstream] = bytearray()
        route["pipes"].append(pipe)
        if not route["cut"]:
            self._connect(pipe)
        self._update_interest(pipe)

    def _connect(self, pipe):
        try:
            pipe.up = socket.create_connection(self.target, timeout=5)
        except OSError:
            self._close(pipe)
            return
        pipe.up.setblocking(False)
        pipe.pending[pipe.up] = bytearray()

    def _update_interest(self, pipe):
        """Reads a side while its peer's buffer has room, writes a side with something
        buffered for it; a cut route does neither."""
        if pipe.closed:
            return
        cut = self._routes[pipe.route]["cut"]
        for sock in (pipe.down, pipe.up):
            if sock is None:
                continue
            peer = pipe.peer(sock)
            events = 0
            if not cut:
                if peer is not None and not pipe.ended and len(pipe.pending[peer]) < MAX_BUFFERED:
                    events |= selectors.EVENT_READ
                if pipe.pending[sock]:
                    events |= selectors.EVENT_WRITE
            registered = sock in self._selector.get_map()
            if events and registered:
                self._selector.modify(sock, events, ("data", pipe))
            elif events:
                self._selector.register(sock, events, ("data", pipe))
            elif registered:
                self._selector.unregister(sock)

    def _transfer(self, pipe, sock, events):
        if pipe.closed:
            return
        if events & selectors.EVENT_READ:
            try:
                data = sock.recv(CHUNK)
            except BlockingIOError:
                data = None
            except OSError:
                data = b""
            if data == b"":
                pipe.ended = True
            elif data:
                pipe.pending[pipe.peer(sock)] += data
        for target in (sock, pipe.peer(sock)):
            if target is not None and pipe.pending[target] and not self._flush(pipe, target):
                return
        if pipe.ended and not any(pipe.pending.values()):
            self._close(pipe)
            return
        self._update_interest(pipe)

    def _flush(self, pipe, sock):
        buffered = pipe.pending[sock]
        try:
            sent = sock.send(buffered)
        except BlockingIOError:
            return True
        except OSError:
            self._close(pipe)
            return False
        del buffered[:sent]
        return True

    def _close(self, pipe):
        if pipe.closed:
            return
        pipe.closed = True
        for sock in (pipe.down, pipe.up):
            if sock is None:
                continue
            if sock in self._selector.get_map():
                self._selector.unregister(sock)
            sock.close()
        route = self._routes.get(pipe.route)
        if route and pipe in route["pipes"]:
            route["pipes"].remove(pipe)
