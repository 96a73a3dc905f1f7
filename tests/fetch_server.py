#!/usr/bin/env python3
"""fetch_server.py: a small HTTP server on 127.0.0.1 for tests/test_fetch.c.

    python3 tests/fetch_server.py DIR [--range] [--max-seconds S]

Serves the files of DIR.  Without --range it ignores Range headers and
always answers 200 with the whole file, as Python's http.server does; with
--range it answers "Range: bytes=N-" with 206 and a Content-Range (416 past
the end).  Two extra paths: /redirect/F answers 302 to /F, and /cut/F
announces F's whole length but sends half of it and closes the connection
(an interrupted download), and /stall/F sends 1,000 bytes of it and then
nothing for 5 seconds (a dead connection).  Prints its port on the first line, then serves
until its standard input closes or S seconds (default 120) pass, so it never
outlives the test that started it.
"""
import argparse
import http.server
import os
import re
import select
import sys
import threading
import time


def make_handler(root, honour_range):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path.startswith("/redirect/"):
                self.send_response(302)
                self.send_header("Location", path[len("/redirect"):])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            cut = path.startswith("/cut/")
            stall = path.startswith("/stall/")
            if cut or stall:
                path = path[path.index("/", 1):]
            name = os.path.basename(path)
            full = os.path.join(root, name)
            if not name or not os.path.isfile(full):
                self.send_error(404)
                return
            size = os.path.getsize(full)
            start, status = 0, 200
            m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", "").strip())
            if honour_range and m:
                start, status = int(m.group(1)), 206
                if start >= size:
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % size)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size - start))
            if status == 206:
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
            self.end_headers()
            left = (size - start) // 2 if cut else size - start
            if stall:  # a little of the body, then silence: a dead connection
                self.wfile.write(b"\0" * 1000)
                self.wfile.flush()
                time.sleep(5)
                self.close_connection = True
                return
            with open(full, "rb") as f:
                f.seek(start)
                while left > 0:
                    chunk = f.read(min(65536, left))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    left -= len(chunk)
            if cut:
                self.close_connection = True

    return Handler


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # a client hanging up is expected


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--range", action="store_true")
    ap.add_argument("--max-seconds", type=float, default=120.0)
    a = ap.parse_args()
    srv = QuietServer(("127.0.0.1", 0), make_handler(a.dir, a.range))
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    select.select([sys.stdin], [], [], a.max_seconds)  # readable at EOF
    srv.shutdown()
    srv.server_close()


if __name__ == "__main__":
    main()
