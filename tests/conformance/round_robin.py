"""A round-robin HTTP balancer for the conformance run across replicas: every request goes to
the next replica, as behind a balancer with no stickiness at all.

    python3 round_robin.py PORT_FILE UPSTREAM [UPSTREAM ...]

Listens on a free loopback port, writes it to PORT_FILE, and forwards each request (head and
body as received, `Connection: close` asked of the replica) to the next UPSTREAM (HOST:PORT),
then streams the replica's answer back as it comes (SSE included) and closes the connection.
Requests with a chunked body are answered 501: the suite sends none.
"""

import asyncio
import itertools
import sys

MAX_HEAD = 64 * 1024


async def forward(reader, writer, upstreams):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    lines = head.decode("latin-1").split("\r\n")
    request_line, fields = lines[0], [line for line in lines[1:] if line]
    length = 0
    kept = []
    for field in fields:
        name, _, value = field.partition(":")
        lowered = name.strip().lower()
        if lowered == "content-length":
            length = int(value.strip())
        if lowered == "transfer-encoding":
            writer.write(b"HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        if lowered in ("connection", "keep-alive"):
            continue
        kept.append(field)
    body = await reader.readexactly(length) if length else b""
    host, port = next(upstreams).rsplit(":", 1)
    try:
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
    except OSError:
        writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()
        return
    upstream_head = "\r\n".join([request_line, *kept, "Connection: close", "", ""])
    up_writer.write(upstream_head.encode("latin-1") + body)
    await up_writer.drain()
    try:
        while chunk := await up_reader.read(64 * 1024):
            writer.write(chunk)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        up_writer.close()
        writer.close()


async def main():
    port_file, upstreams = sys.argv[1], itertools.cycle(sys.argv[2:])
    server = await asyncio.start_server(
        lambda r, w: forward(r, w, upstreams), "127.0.0.1", 0, limit=MAX_HEAD
    )
    port = server.sockets[0].getsockname()[1]
    with open(port_file, "w") as out:
        out.write(f"{port}\n")
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
