"""Files as resources: `shop mcp --resource-root DIR` serves a directory the test writes, and a
file edited on disk is told to the client that follows it - with `resources/subscribe` on
2025-11-25, with a `subscriptions/listen` stream on 2026-07-28 - driven by the Python MCP client
against a fresh server per test.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types import ResourceUpdatedNotification, TextResourceContents

from conftest import EXPECTED_VERSION

pytestmark = pytest.mark.anyio

#: How long an edit may take to be told (the server debounces for 200 ms).
NOTICE_SECONDS = 10


def uri_of(path: Path) -> str:
    return f"file://{os.path.realpath(path)}"


async def read_text(client, uri: str) -> str:
    [content] = (await client.read_resource(uri)).contents
    assert isinstance(content, TextResourceContents)
    return content.text


async def test_the_directory_given_is_served_and_nothing_outside(connect, mode, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "faq.md").write_text("# FAQ\n")
    (tmp_path / "secret.txt").write_text("not for clients")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    async with connect(args=("--resource-root", str(root))) as client:
        listing = await client.list_resources()
        files = [(r.name, str(r.uri)) for r in listing.resources if str(r.uri).startswith("file:")]
        assert files == [("faq.md", uri_of(root / "faq.md"))]
        assert await read_text(client, uri_of(root / "faq.md")) == "# FAQ\n"
        not_found = {"2025-11-25": -32002, "2026-07-28": -32602}[EXPECTED_VERSION[mode]]
        for uri in (
            f"{uri_of(root)}/../secret.txt",
            f"{uri_of(root)}/%2e%2e/secret.txt",
            f"{uri_of(root)}/link.txt",
            uri_of(tmp_path / "secret.txt"),
        ):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert refused.value.error.code == not_found, uri
            assert "not for clients" not in str(refused.value.error)
        assert await read_text(client, uri_of(root / "faq.md")) == "# FAQ\n"


async def test_an_edit_is_told_to_the_client_that_follows_the_file(connect, mode, tmp_path):
    (tmp_path / "faq.md").write_text("# FAQ\n")
    uri = uri_of(tmp_path / "faq.md")
    told: list[str] = []

    async def handler(message) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            told.append(message.params.uri)

    async with connect(args=("--resource-root", str(tmp_path)), message_handler=handler) as client:
        if EXPECTED_VERSION[mode] == "2025-11-25":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # removed on 2026-07-28, part of 2025-11-25
                await client.subscribe_resource(uri)
            (tmp_path / "faq.md").write_text("# FAQ\n\nNew answers.\n")
            with anyio.fail_after(NOTICE_SECONDS):
                while not told:
                    await anyio.sleep(0.05)
            assert told[0] == uri
        else:
            async with client.listen(resource_subscriptions=[uri]) as subscription:
                (tmp_path / "faq.md").write_text("# FAQ\n\nNew answers.\n")
                with anyio.fail_after(NOTICE_SECONDS):
                    event = await subscription.__anext__()
                assert event == ResourceUpdated(uri=uri)
        assert await read_text(client, uri) == "# FAQ\n\nNew answers.\n"
