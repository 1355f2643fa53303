"""deno task bench's round-trip section, the Python side: the seed store's commits timed one by
one (tests/_support/seed_writer.py's commit(): one counter ADD, then one TransactWriteItems), with
--trace the seed's trace append after each (Query the highest index, Put the next, Delete the
step that falls out of trace_max 200), through the endpoint given (the bench's delaying proxy).

    python3 _bench_latency.py ENDPOINT PREFIX COMMITS [--trace]

Prints one JSON object: {"ms": [each commit's milliseconds]}. Credentials as seed_writer.py.
"""
import json
import os
import sys
import time

import boto3

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "_support"))
from seed_writer import commit, dumps, new_execution  # noqa: E402

TRACE_MAX = 200


def append_trace(db, t, exe_id: str, entry: dict) -> None:
    top = db.query(TableName=t("trace"), KeyConditionExpression="execution_id = :id",
                   ExpressionAttributeValues={":id": {"S": exe_id}}, ScanIndexForward=False,
                   Limit=1, ConsistentRead=True)
    items = top.get("Items", [])
    index = (int(items[0]["idx"]["N"]) if items else -1) + 1
    db.put_item(TableName=t("trace"), Item={"execution_id": {"S": exe_id},
                                            "idx": {"N": str(index)}, "entry": {"S": dumps(entry)}})
    if index - TRACE_MAX >= 0:
        db.delete_item(TableName=t("trace"), Key={"execution_id": {"S": exe_id},
                                                  "idx": {"N": str(index - TRACE_MAX)}})


def main() -> None:
    endpoint, prefix, commits = sys.argv[1], sys.argv[2], int(sys.argv[3])
    traced = "--trace" in sys.argv[4:]
    db = boto3.client("dynamodb", endpoint_url=endpoint,
                      region_name=os.environ.get("AWS_REGION") or "us-east-1",
                      aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID") or "test",
                      aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY") or "test")
    t = lambda name: f"{prefix}_{name}"  # noqa: E731
    wrote = {"executions": [], "outbox": [], "spawns": [], "timers": {}, "processed": []}
    exe = new_execution()
    commit(db, t, exe, wrote, emits=0, spawns=0, timers=0, mark=False)  # the insert, untimed
    ms = []
    for i in range(commits + 1):  # the first warms the connection, untimed
        exe["processed_events"] += 1
        started = time.perf_counter()
        commit(db, t, exe, wrote, emits=2, spawns=0, timers=0, mark=True)
        if traced:
            append_trace(db, t, exe["id"], {"event": "order.step", "i": i})
        if i > 0:
            ms.append((time.perf_counter() - started) * 1000)
    print(json.dumps({"ms": ms}))


if __name__ == "__main__":
    main()
