"""Flower's intervals in fedbw's deployment model are the pinned Flower's module constants.

The model (fedbw.netmodel.flower.FlowerCosts) copies them because netmodel must not import Flower; this
test reads them from the installed flwr's source, so an upgrade that moves one fails here, naming it.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest

from fedbw.netmodel.flower import FlowerCosts
from fedbw.netmodel.payload import ARRAY_CHUNK_BYTES

FLWR = Path(__import__("flwr").__file__).parent
COSTS = FlowerCosts()


def _source(rel: str) -> str:
    return (FLWR / rel).read_text(encoding="utf-8")


def _after(text: str, anchor: str, pattern: str, within: int = 400) -> str:
    """The first match of ``pattern`` within ``within`` characters after ``anchor``."""
    i = text.index(anchor)
    m = re.search(pattern, text[i:i + within])
    assert m is not None, f"{pattern!r} not found after {anchor!r}"
    return m.group(1)


def test_pinned_flower_version():
    assert metadata.version("flwr") == "1.42.0", "re-check every constant below for the new Flower version"


def test_supernode_idle_poll_and_reply_poll():
    src = _source("supernode/start_client_internal.py")
    assert float(_after(src, "If no message was received, wait for a while", r"time\.sleep\(([\d.]+)\)")) == \
        COSTS.supernode_idle_poll_s
    assert float(_after(src, "while not (reply_messages := state.get_messages_legacy(is_reply=True))",
                        r"time\.sleep\(([\d.]+)\)")) == COSTS.reply_poll_s


def test_serverapp_reply_poll():
    src = _source("superlink/grid/http_grid.py")
    assert float(_after(src, "if len(msg_ids) == 0:", r"time\.sleep\(([\d.]+)\)")) == COSTS.serverapp_poll_s


def test_superexec_task_poll():
    src = _source("supercore/superexec/run_superexec.py")
    assert float(re.search(r"_DEFAULT_TASK_POLL_INTERVAL_SECONDS = ([\d.]+)", src).group(1)) == \
        COSTS.superexec_poll_s


@pytest.mark.parametrize("name, value", [("PULL_INITIAL_BACKOFF", COSTS.backoff_first_s),
                                         ("PULL_BACKOFF_CAP", COSTS.backoff_cap_s)])
def test_object_backoff(name, value):
    src = _source("supercore/constant.py")
    assert float(re.search(rf"^{name} = ([\d.]+)", src, re.M).group(1)) == value


def test_object_workers_and_chunk_size():
    src = _source("supercore/constant.py")
    assert int(re.search(r'FLWR_PRIVATE_MAX_CONCURRENT_OBJ_PULLS", "(\d+)"', src).group(1)) == COSTS.object_workers
    assert int(re.search(r'FLWR_PRIVATE_MAX_CONCURRENT_OBJ_PUSHES", "(\d+)"', src).group(1)) == COSTS.object_workers
    assert int(re.search(r'FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE", "(\d+)"', _source("common/constant.py")).group(1)) == \
        ARRAY_CHUNK_BYTES


def test_reply_content_wait():
    src = _source("supernode/start_client_internal.py")
    assert float(_after(src, "# Wait for the content to be available", r"time\.sleep\(([\d.]+)\)")) == \
        COSTS.content_wait_s


def test_pull_backoff_jitter_and_the_supernode_storing_objects_only_once_all_are_in():
    """The ClientApp's pull waits for the whole message (the model's ``pull_stored_at``) because the
    SuperNode puts the objects in its store only after ``pull_objects`` returned them all."""
    utils = _source("supercore/inflatable/inflatable_utils.py")
    assert float(_after(utils, "exponential backoff with", r"delay \* \(1 \+ random\.uniform\(-([\d.]+), ")) == \
        COSTS.backoff_jitter
    node = _source("supernode/start_client_internal.py")
    pulled = node.index("obj_contents = pull_objects(")
    assert pulled < node.index("object_store.put(obj_id, obj_contents.pop(obj_id))", pulled)


def test_heartbeat_interval_and_patience():
    from fedbw.flower_protocol import HEARTBEAT_INTERVAL_S, HEARTBEAT_PATIENCE

    src = _source("common/constant.py")
    assert float(re.search(r"HEARTBEAT_DEFAULT_INTERVAL = ([\d.]+)", src).group(1)) == HEARTBEAT_INTERVAL_S
    assert int(re.search(r"HEARTBEAT_PATIENCE = (\d+)", src).group(1)) == HEARTBEAT_PATIENCE
    state = _source("server/superlink/linkstate/in_memory_linkstate.py")
    assert "HEARTBEAT_PATIENCE * heartbeat_interval" in state  # on line until last heartbeat + patience × interval


def test_object_push_session_and_concurrent_pushes():
    from fedbw.flower_limits import CONCURRENT_OBJECT_PUSHES, OBJECT_PUSH_SESSION_TTL_S

    src = _source("supercore/constant.py")
    assert float(re.search(r"OBJECT_PUSH_SESSION_TTL_SECONDS = (\d+)", src).group(1)) == OBJECT_PUSH_SESSION_TTL_S
    assert int(re.search(r'"FLWR_PRIVATE_MAX_CONCURRENT_OBJ_PUSHES", "(\d+)"', src).group(1)) == \
        CONCURRENT_OBJECT_PUSHES
