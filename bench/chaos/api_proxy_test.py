"""The holder's API proxy: bytes flow both ways, a cut route holds them back without an
error, and a restored route delivers what was held back."""

import os
import socket
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_proxy import ApiProxy  # noqa: E402


class EchoServer:
    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn):
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                conn.sendall(data)


def receive(sock, size, timeout):
    sock.settimeout(timeout)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


class ApiProxyTest(unittest.TestCase):
    def setUp(self):
        self.server = EchoServer()
        self.proxy = ApiProxy(self.server.address)
        self.addCleanup(self.proxy.stop)
        self.port = self.proxy.add_route("holder")

    def test_bytes_flow_both_ways(self):
        with socket.create_connection(("127.0.0.1", self.port)) as client:
            payload = os.urandom(300000)
            client.sendall(payload)
            self.assertEqual(receive(client, len(payload), 10), payload)

    def test_a_cut_route_holds_bytes_back_until_restored(self):
        with socket.create_connection(("127.0.0.1", self.port)) as client:
            client.sendall(b"before")
            self.assertEqual(receive(client, 6, 10), b"before")
            self.proxy.cut("holder")
            client.sendall(b"during")
            with self.assertRaises(socket.timeout):
                receive(client, 1, 0.3)
            self.proxy.restore("holder")
            self.assertEqual(receive(client, 6, 10), b"during")

    def test_a_connection_opened_while_cut_is_carried_once_restored(self):
        self.proxy.cut("holder")
        with socket.create_connection(("127.0.0.1", self.port)) as client:
            client.sendall(b"hello")
            with self.assertRaises(socket.timeout):
                receive(client, 1, 0.3)
            self.proxy.restore("holder")
            self.assertEqual(receive(client, 5, 10), b"hello")

    def test_an_unknown_route_is_the_callers_error(self):
        with self.assertRaises(KeyError):
            self.proxy.cut("nobody")
        with socket.create_connection(("127.0.0.1", self.port)) as client:  # still serving
            client.sendall(b"ok")
            self.assertEqual(receive(client, 2, 10), b"ok")

    def test_routes_are_cut_one_at_a_time(self):
        other = self.proxy.add_route("other")
        self.proxy.cut("holder")
        with socket.create_connection(("127.0.0.1", other)) as client:
            client.sendall(b"free")
            self.assertEqual(receive(client, 4, 10), b"free")


if __name__ == "__main__":
    unittest.main()
