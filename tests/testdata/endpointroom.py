"""A game server in Python that is a Foyer room through its keeper's local
endpoint (probe "endpoint"): python3 endpointroom.py PORT BIND.

Its game, on UDP PORT, answers text datagrams:
  HELLO  a player comes in: if the endpoint says it holds a seat and takes
         it as a player, "WELCOME <players>"; otherwise nothing at all
  TOKEN <hex>  whether the seat token is one of the room's, as the endpoint
         verifies it: "SEAT <seat>" or "NO SEAT"
  BYE    the player leaves: "BYE <players>"
  MUTE   the server stops reporting its health (and is reaped for it)
  END    the room is done: the server shuts it down and exits
"""

import http.client
import json
import os
import socket
import sys
import threading
import time

ENDPOINT = os.environ["FOYER_ENDPOINT"]


class UnixConnection(http.client.HTTPConnection):
    def __init__(self):
        super().__init__("localhost", timeout=5)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(ENDPOINT)


def call(method, route, body=None):
    c = UnixConnection()
    try:
        c.request(method, route, body=None if body is None else json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        return r.status, json.loads(data) if data else None
    finally:
        c.close()


def main():
    port, bind = int(sys.argv[1]), sys.argv[2] or "0.0.0.0"
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((bind, port))
    _, room = call("GET", "/v1/room")
    call("PUT", "/v1/metadata", {"name": "Python room %d" % room["room_id"], "mode": "duel", "map": "arena",
                                 "tags": {"lang": "python"}})
    call("POST", "/v1/ready")
    muted = threading.Event()

    def health():
        while not muted.is_set():
            call("POST", "/v1/health")
            time.sleep(0.5)
    threading.Thread(target=health, daemon=True).start()

    while True:
        data, peer = sock.recvfrom(2048)
        player = {"address": "%s:%d" % peer}
        if data == b"HELLO":
            _, seat = call("POST", "/v1/seats/verify", player)
            if not seat["seated"]:
                continue  # no seat: no reply, as a room's door does
            status, body = call("POST", "/v1/players/connect", player)
            if status == 200:
                sock.sendto(b"WELCOME %d" % body["players"], peer)
        elif data.startswith(b"TOKEN "):
            _, seat = call("POST", "/v1/seats/verify", {"token": data[6:].decode()})
            sock.sendto(b"SEAT %d" % seat["seat"] if seat["seated"] else b"NO SEAT", peer)
        elif data == b"BYE":
            status, body = call("POST", "/v1/players/disconnect", player)
            if status == 200:
                sock.sendto(b"BYE %d" % body["players"], peer)
        elif data == b"MUTE":
            muted.set()
        elif data == b"END":
            call("POST", "/v1/shutdown")
            return


main()
