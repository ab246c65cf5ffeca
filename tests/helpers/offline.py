"""The prelude of a subprocess that must load a model with the network unreachable.

Why a subprocess: a model library may open sockets at import time or cache a session; only a fresh interpreter whose
socket functions refuse every connection proves that loading needs no network. The prelude records each attempt in
`attempts` (a list the snippet prints), so a test can assert none was even tried."""

NO_NETWORK = r"""
import json, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[1:2]))
    raise OSError("network disabled by the test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
"""
