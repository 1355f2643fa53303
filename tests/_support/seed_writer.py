"""Commits rows exactly as the Python harel store (the seed) does, into existing tables.

Per execution: an insert (a whole-item Put of id, data, version, definition_id, conditioned on
attribute_not_exists(id)), then --commits commits, each one counter ADD per kind it writes
(items "outbox" / "spawn" of {prefix}_counters, ADD n :k), then one TransactWriteItems: the
execution's whole-item Put conditioned on the old version, the outbox rows (seq, target_id, event),
the spawn rows (seq, parent_id, child_id, root_path, context), the processed mark
(execution_id, event_id) and the timer Puts (execution_id, path, fire_at). No other attribute.

    python3 seed_writer.py --endpoint URL --prefix P [--executions N] [--commits C]
        [--emits K] [--spawns S] [--timers T] [--ensure-tables]
        [--created-ago SECONDS] [--fire-in SECONDS]

Prints one JSON object: what it wrote (executions, outbox, spawns, timers, processed).
Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY when set, else "test"/"test";
region AWS_REGION, else us-east-1 (the Deno test client's choice, the same DynamoDB Local
database).
"""

import argparse
import json
import os
import time
import uuid
from datetime import datetime, timedelta, timezone

import boto3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--executions", type=int, default=1)
    parser.add_argument("--commits", type=int, default=1, help="commits after each insert")
    parser.add_argument("--emits", type=int, default=0, help="outbox rows per commit")
    parser.add_argument("--spawns", type=int, default=0, help="spawn rows per commit")
    parser.add_argument("--timers", type=int, default=0, help="timer schedules per commit")
    parser.add_argument("--ensure-tables", action="store_true", help="the seed's seven tables")
    parser.add_argument("--targets-apart", action="store_true",
                        help="every emit to a target of its own (target-{execution}-{i})")
    parser.add_argument("--created-ago", type=float, default=None,
                        help="events' created_time this many seconds ago, ISO as the model's "
                        "datetime dumps it (default: null)")
    parser.add_argument("--fire-in", type=float, default=3600,
                        help="timers fire this many seconds from now (plus k for the k-th)")
    args = parser.parse_args()

    db = boto3.client(
        "dynamodb",
        endpoint_url=args.endpoint,
        region_name=os.environ.get("AWS_REGION") or "us-east-1",
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID") or "test",
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY") or "test",
    )
    t = lambda name: f"{args.prefix}_{name}"  # noqa: E731
    if args.ensure_tables:
        ensure_tables(db, t)

    global CREATED_AGO, FIRE_IN, TARGETS_APART
    CREATED_AGO, FIRE_IN, TARGETS_APART = args.created_ago, args.fire_in, args.targets_apart
    wrote = {"executions": [], "outbox": [], "spawns": [], "timers": {}, "processed": []}
    for _ in range(args.executions):
        exe = new_execution()
        commit(db, t, exe, wrote, emits=0, spawns=0, timers=0, mark=False)
        for _ in range(args.commits):
            exe["processed_events"] += 1
            commit(db, t, exe, wrote, args.emits, args.spawns, args.timers, mark=True)
        wrote["executions"].append({"id": exe["id"], "version": exe["version"]})
    wrote["timers"] = list(wrote["timers"].values())
    print(json.dumps(wrote))


def ensure_tables(db, t) -> None:
    """The seed's _ensure_tables: keys only, PAY_PER_REQUEST; an existing table is fine."""
    specs = [
        ("executions", [("id", "S")]),
        ("outbox", [("seq", "N")]),
        ("spawns", [("seq", "N")]),
        ("timers", [("execution_id", "S"), ("path", "S")]),
        ("processed", [("execution_id", "S"), ("event_id", "S")]),
        ("counters", [("id", "S")]),
        ("trace", [("execution_id", "S"), ("idx", "N")]),
    ]
    for name, keys in specs:
        try:
            db.create_table(
                TableName=t(name),
                KeySchema=[
                    {"AttributeName": k, "KeyType": "HASH" if i == 0 else "RANGE"}
                    for i, (k, _) in enumerate(keys)
                ],
                AttributeDefinitions=[{"AttributeName": k, "AttributeType": v} for k, v in keys],
                BillingMode="PAY_PER_REQUEST",
            )
        except db.exceptions.ResourceInUseException:
            pass


def new_execution() -> dict:
    """An Execution with the engine's defaults, its fields in the model's order."""
    return {
        "id": uuid.uuid4().hex,
        "definition_id": "seed_writer",
        "definition_fqn": None,
        "root_path": "",
        "status": "RUNNING",
        "outcome": None,
        "error": None,
        "active_path": "main.waiting",
        "history": {},
        "context": {"writer": "python"},
        "processed_events": 0,
        "version": 0,
        "priority": 0,
        "parent_id": None,
        "child_id": None,
        "deferred": [],
        "children": {},
        "invoke_seq": {},
    }


CREATED_AGO = None  # --created-ago: None writes created_time null
TARGETS_APART = False  # --targets-apart
FIRE_IN = 3600  # --fire-in


def new_event(kind: str, data: dict) -> dict:
    """An Event as the seed's model dumps it (id, kind, created_time, received_time, data)."""
    created = None
    if CREATED_AGO is not None:
        created = (datetime.now(timezone.utc) - timedelta(seconds=CREATED_AGO)).isoformat()
    return {"id": uuid.uuid4().hex, "kind": kind, "created_time": created, "received_time": None,
            "data": data}


def dumps(value) -> str:
    """Compact JSON, as pydantic's model_dump_json writes it."""
    return json.dumps(value, separators=(",", ":"))


def next_seq(db, t, name: str, count: int) -> int:
    """The seed's _next_seq: ADD count to the counter item, return the first of the block."""
    out = db.update_item(
        TableName=t("counters"),
        Key={"id": {"S": name}},
        UpdateExpression="ADD n :k",
        ExpressionAttributeValues={":k": {"N": str(count)}},
        ReturnValues="UPDATED_NEW",
    )
    return int(out["Attributes"]["n"]["N"]) - count + 1


def commit(db, t, exe: dict, wrote: dict, emits: int, spawns: int, timers: int, mark: bool) -> None:
    outbox = []
    if emits:
        base = next_seq(db, t, "outbox", emits)
        for i in range(emits):
            if TARGETS_APART:
                target = f"target-{exe['id']}-{i}"
            else:
                target = None if i % 2 else f"target-{i}"
            event = new_event("seed.emit", {"i": i, "src": exe["id"]})
            outbox.append({"seq": base + i, "target_id": target, "event": event})
    spawned = []
    if spawns:
        base = next_seq(db, t, "spawn", spawns)
        for i in range(spawns):
            spawned.append({"seq": base + i, "child_id": uuid.uuid4().hex,
                            "root_path": f"main.region{i}", "context": {"i": i}})
    old = exe["version"]
    exe["version"] = old + 1
    put = {
        "TableName": t("executions"),
        "Item": {
            "id": {"S": exe["id"]},
            "data": {"S": dumps(exe)},
            "version": {"N": str(exe["version"])},
            "definition_id": {"S": exe["definition_id"]},
        },
    }
    if old == 0:
        put["ConditionExpression"] = "attribute_not_exists(id)"
    else:
        put["ConditionExpression"] = "version = :ov"
        put["ExpressionAttributeValues"] = {":ov": {"N": str(old)}}
    txn = [{"Put": put}]
    for o in outbox:
        target = {"NULL": True} if o["target_id"] is None else {"S": o["target_id"]}
        txn.append({"Put": {"TableName": t("outbox"), "Item": {
            "seq": {"N": str(o["seq"])}, "target_id": target, "event": {"S": dumps(o["event"])}}}})
    for s in spawned:
        txn.append({"Put": {"TableName": t("spawns"), "Item": {
            "seq": {"N": str(s["seq"])},
            "parent_id": {"S": exe["id"]},
            "child_id": {"S": s["child_id"]},
            "root_path": {"S": s["root_path"]},
            "context": {"S": json.dumps(s["context"])},
        }}})
    event_id = uuid.uuid4().hex if mark else None
    if event_id is not None:
        txn.append({"Put": {"TableName": t("processed"), "Item": {
            "execution_id": {"S": exe["id"]}, "event_id": {"S": event_id}}}})
    scheduled = []
    for k in range(timers):
        # str() of a Python float, as the seed's Decimal(str(op.fire_at)).
        fire_at = round(time.time(), 2) + FIRE_IN + k
        path = f"main.timer{k}"
        scheduled.append((path, fire_at))
        txn.append({"Put": {"TableName": t("timers"), "Item": {
            "execution_id": {"S": exe["id"]}, "path": {"S": path},
            "fire_at": {"N": str(fire_at)}}}})
    db.transact_write_items(TransactItems=txn)

    wrote["outbox"] += [{"seq": o["seq"], "target_id": o["target_id"], "event_id": o["event"]["id"]}
                        for o in outbox]
    wrote["spawns"] += [{"seq": s["seq"], "parent_id": exe["id"], "child_id": s["child_id"]}
                        for s in spawned]
    if event_id is not None:
        wrote["processed"].append({"execution_id": exe["id"], "event_id": event_id})
    for path, fire_at in scheduled:  # a re-schedule of a path replaces it, as the Put does
        wrote["timers"][(exe["id"], path)] = {"execution_id": exe["id"], "path": path,
                                              "fire_at": fire_at}


if __name__ == "__main__":
    main()
