"""harel's control.cancel (harel.engine.aio.control / harel.engine.control), rule for rule, on an
in-memory store of execution rows, for the differential tests of FleetClient.cancel.

harel itself is not installed here: this mirrors control.cancel, _commit_status, _propagate,
terminate and engine.has_cancel_handler (with the structural part of core._resolve: the active
state or one of its ancestors below the execution's root is the source of a Cancel transition).

Reads one JSON document from stdin: a list of cases
  {"cancel_sources": {definition_id: [state path, ...]}, "rows": [Execution, ...],
   "id": execution id, "reason": {...}}
and prints one JSON line per case: {"rows": {id: [status, version]}, "emits": [[target, kind, data]]}.
"""

import copy
import json
import sys

RETRIES = 5
TERMINAL = ("CANCELLED", "DONE")


class StoreConflict(Exception):
    pass


class Store:
    def __init__(self, rows):
        self.rows = {r["id"]: copy.deepcopy(r) for r in rows}
        self.emits = []

    def load(self, execution_id):
        row = self.rows.get(execution_id)
        return copy.deepcopy(row) if row is not None else None

    def commit(self, exe, emits):
        if self.rows[exe["id"]]["version"] != exe["version"]:
            raise StoreConflict()
        exe["version"] += 1
        self.rows[exe["id"]] = exe
        self.emits.extend(emits)


def chain_below_root(root, active):
    """The paths of core.chain(root, active)[1:]: below the root, down to the active state."""
    if active == root:
        return []
    prefix = f"{root}." if root else ""
    rest = active[len(prefix):].split(".")
    return [prefix + ".".join(rest[: i + 1]) for i in range(len(rest))]


def has_cancel_handler(sources, exe):
    if exe["active_path"] is None:
        return False
    below = chain_below_root(exe.get("root_path", ""), exe["active_path"])
    return any(path in sources.get(exe["definition_id"], ()) for path in below)


def commit_status(store, execution_id, new_status, emit_cancel=False, cancel_data=None):
    for _ in range(RETRIES):
        exe = store.load(execution_id)
        if exe is None:
            raise KeyError(execution_id)
        if exe["status"] in TERMINAL and new_status != "CANCELLED":
            return
        exe["status"] = new_status
        emits = [(exe["id"], "Cancel", dict(cancel_data or {}))] if emit_cancel else []
        try:
            store.commit(exe, emits)
            return
        except StoreConflict:
            continue


def propagate(store, parent_id, new_status):
    parent = store.load(parent_id)
    if parent is None:
        return
    for cid in parent["children"]:
        child = store.load(cid)
        if child is not None:
            commit_status(store, child["id"], new_status)
            propagate(store, child["id"], new_status)


def terminate(store, execution_id):
    commit_status(store, execution_id, "CANCELLED")
    propagate(store, execution_id, "CANCELLED")


def cancel(store, sources, execution_id, reason=None):
    exe = store.load(execution_id)
    if exe is None:
        raise KeyError(execution_id)
    if has_cancel_handler(sources, exe):
        commit_status(store, execution_id, "CANCELLING", emit_cancel=True, cancel_data=reason)
        propagate(store, execution_id, "CANCELLED")
    else:
        terminate(store, execution_id)


if __name__ == "__main__":
    for case in json.load(sys.stdin):
        store = Store(case["rows"])
        cancel(store, case["cancel_sources"], case["id"], reason=case["reason"])
        print(json.dumps({
            "rows": {i: [r["status"], r["version"]] for i, r in store.rows.items()},
            "emits": [list(e) for e in store.emits],
        }), flush=True)
