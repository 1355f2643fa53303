"""The Python harel store's commits, one at a time on request, with the seed's algorithm (boto3):
for tests that interleave them with this module's commits (#39). Reads one JSON command a line
on stdin, answers one JSON line on stdout:

    {"op": "commit", "prefix": P, "id": ID, "emits": [TARGET, ...], "timers": [[PATH, AT], ...]}
        loads the execution (strongly; a new one if missing), and commits it at the next version
        as the seed does: one ADD n per counter it needs, then one TransactWriteItems (the
        execution's whole-item Put conditioned on the old version, the outbox rows seq,
        target_id, event, the timer Puts). Answers {"version": V, "seqs": [...]}.
    {"op": "lose", "prefix": P, "n": K}
        ADD n K on the outbox counter and nothing else: a commit that reserved its seqs and
        never landed. Answers {"n": N}.

    python3 seed_turns.py ENDPOINT [REGION]
"""
import json
import os
import sys


import boto3

sys.path.insert(0, os.path.dirname(__file__))
from seed_writer import dumps, new_event, new_execution, next_seq  # noqa: E402

endpoint = sys.argv[1]
region = sys.argv[2] if len(sys.argv) > 2 else "us-east-1"
db = boto3.client("dynamodb", endpoint_url=endpoint, region_name=region,
                  aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID") or "test",
                  aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY") or "test")


def commit(prefix, exe_id, emits, timers):
    t = lambda name: f"{prefix}_{name}"  # noqa: E731
    found = db.get_item(TableName=t("executions"), Key={"id": {"S": exe_id}},
                        ConsistentRead=True).get("Item")
    if found is None:
        exe = new_execution()
        exe["id"] = exe_id
    else:
        exe = json.loads(found["data"]["S"])
        exe["version"] = int(found["version"]["N"])
    seqs = []
    if emits:
        base = next_seq(db, t, "outbox", len(emits))
        seqs = [base + i for i in range(len(emits))]
    old = exe["version"]
    exe["version"] = old + 1
    exe["processed_events"] = exe.get("processed_events", 0) + 1
    put = {"TableName": t("executions"), "Item": {
        "id": {"S": exe["id"]}, "data": {"S": dumps(exe)},
        "version": {"N": str(exe["version"])}, "definition_id": {"S": exe["definition_id"]}}}
    if old == 0:
        put["ConditionExpression"] = "attribute_not_exists(id)"
    else:
        put["ConditionExpression"] = "version = :ov"
        put["ExpressionAttributeValues"] = {":ov": {"N": str(old)}}
    txn = [{"Put": put}]
    for seq, target in zip(seqs, emits):
        event = new_event("seed.emit", {"src": exe["id"], "seq": seq})
        txn.append({"Put": {"TableName": t("outbox"), "Item": {
            "seq": {"N": str(seq)},
            "target_id": {"NULL": True} if target is None else {"S": target},
            "event": {"S": dumps(event)}}}})
    for path, at in timers:
        txn.append({"Put": {"TableName": t("timers"), "Item": {
            "execution_id": {"S": exe["id"]}, "path": {"S": path}, "fire_at": {"N": str(at)}}}})
    db.transact_write_items(TransactItems=txn)
    return {"version": exe["version"], "seqs": seqs}


def lose(prefix, n):
    out = db.update_item(TableName=f"{prefix}_counters", Key={"id": {"S": "outbox"}},
                         UpdateExpression="ADD n :k",
                         ExpressionAttributeValues={":k": {"N": str(n)}},
                         ReturnValues="UPDATED_NEW")
    return {"n": int(out["Attributes"]["n"]["N"])}


for line in sys.stdin:
    command = json.loads(line)
    try:
        if command["op"] == "commit":
            answer = commit(command["prefix"], command["id"], command.get("emits", []),
                            command.get("timers", []))
        else:
            answer = lose(command["prefix"], command["n"])
    except Exception as error:  # noqa: BLE001 - said to the test, which fails with it
        answer = {"error": f"{type(error).__name__}: {error}"}
    print(json.dumps(answer), flush=True)
