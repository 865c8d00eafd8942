#!/usr/bin/env python3
"""The simplest stdio load driver: N callers pipelined over one connection, nothing else.

    bench/simple_stdio_load.py [--callers 32] [--seconds 10] -- SERVER COMMAND ...

It is deliberately not mcp-load (bench/src/bin/mcp-load/): a second, independent driver, in
Python's standard library only, written the way anyone would write one. It spawns the server,
sends `initialize` (2025-11-25) and `notifications/initialized`, then starts N callers; each
sends `tools/call search_products {"query": "mouse"}` with its own id, waits for its answer,
checks it holds 4 products, and sends the next. One task reads the server's stdout line by line
and hands each answer to its caller. After a 1 s warm-up it counts answers for the given
seconds and prints one line: calls/s, and the CPU time of the server and of the driver itself
per call (the server's from /proc, its threads included), so a driver that is the bottleneck
shows as one.
"""

import argparse
import asyncio
import json
import os
import resource
import sys
import time

REQUEST = {"name": "search_products", "arguments": {"query": "mouse"}}


def server_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main(options):
    server = await asyncio.create_subprocess_exec(
        *options.command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=1 << 24,
    )
    waiting = {}

    def send(message):
        server.stdin.write(json.dumps(message).encode() + b"\n")

    async def read_answers():
        while line := await server.stdout.readline():
            message = json.loads(line)
            future = waiting.pop(message.get("id"), None)
            if future is not None:
                future.set_result(message)

    reader = asyncio.create_task(read_answers())

    async def ask(request_id, method, params):
        future = asyncio.get_running_loop().create_future()
        waiting[request_id] = future
        send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        await server.stdin.drain()
        return await future

    init = await ask(
        0,
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "simple_stdio_load", "version": "1"},
        },
    )
    if "result" not in init:
        sys.exit(f"initialize failed: {init}")
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    counting = False
    answered = 0
    stop = False

    async def caller(number):
        nonlocal answered
        sent = 0
        while not stop:
            sent += 1
            answer = await ask(f"{number}-{sent}", "tools/call", REQUEST)
            products = answer.get("result", {}).get("structuredContent", {}).get("products")
            if products is None or len(products) != 4:
                sys.exit(f"unexpected answer: {json.dumps(answer)[:300]}")
            if counting:
                answered += 1

    callers = [asyncio.create_task(caller(n)) for n in range(options.callers)]
    await asyncio.sleep(1.0)
    server_before, own_before = server_cpu_seconds(server.pid), own_cpu_seconds()
    started = time.monotonic()
    counting = True
    await asyncio.sleep(options.seconds)
    counting = False
    elapsed = time.monotonic() - started
    server_used = server_cpu_seconds(server.pid) - server_before
    own_used = own_cpu_seconds() - own_before
    stop = True
    await asyncio.gather(*callers)
    reader.cancel()
    server.stdin.close()
    await server.wait()
    print(
        f"callers={options.callers} seconds={elapsed:.1f} calls={answered} "
        f"throughput={answered / elapsed:.0f}/s "
        f"server_cpu_us_per_call={server_used * 1e6 / max(answered, 1):.1f} "
        f"server_cores={server_used / elapsed:.2f} "
        f"driver_cpu_us_per_call={own_used * 1e6 / max(answered, 1):.1f} "
        f"driver_cores={own_used / elapsed:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callers", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("command", nargs="+")
    asyncio.run(main(parser.parse_args()))
