"""A Python fleet's day, as the Python harel store writes it (boto3, whole-item Puts, the seed's
counter): executions started and moved on, one of them waiting for an event another sends it,
and a row no one can read. Prints the ids as JSON.

    python3 python_fleet.py ENDPOINT PREFIX
"""
import json
import sys
import uuid

import boto3

endpoint, prefix = sys.argv[1], sys.argv[2]
db = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="test", aws_secret_access_key="test")


def t(name: str) -> str:
    return f"{prefix}_{name}"


def execution(definition_id: str) -> dict:
    return {"id": uuid.uuid4().hex, "definition_id": definition_id, "definition_fqn": None,
            "root_path": "main", "status": "PENDING", "outcome": None, "error": None,
            "active_path": None, "history": {}, "context": {}, "processed_events": 0,
            "version": 0, "priority": 0, "parent_id": None, "child_id": None, "deferred": [],
            "children": {}, "invoke_seq": {}}


def put(exe: dict) -> dict:
    return {"TableName": t("executions"), "Item": {
        "id": {"S": exe["id"]}, "data": {"S": json.dumps(exe)},
        "version": {"N": str(exe["version"])}, "definition_id": {"S": exe["definition_id"]}}}


def commit(exe: dict, emits=()) -> None:
    """The Python store's commit: the execution's Put at the next version, and its outbox rows."""
    old = exe["version"]
    exe["version"] = old + 1
    execution_put = put(exe)
    if old == 0:
        execution_put["ConditionExpression"] = "attribute_not_exists(id)"
    else:
        execution_put["ConditionExpression"] = "version = :ov"
        execution_put["ExpressionAttributeValues"] = {":ov": {"N": str(old)}}
    items = [{"Put": execution_put}]
    if emits:
        n = int(db.update_item(TableName=t("counters"), Key={"id": {"S": "outbox"}},
                               UpdateExpression="ADD n :k",
                               ExpressionAttributeValues={":k": {"N": str(len(emits))}},
                               ReturnValues="UPDATED_NEW")["Attributes"]["n"]["N"])
        for i, (target, kind) in enumerate(emits):
            event = {"id": uuid.uuid4().hex, "kind": kind, "data": {"from": exe["id"]},
                     "created_time": None, "received_time": None}
            items.append({"Put": {"TableName": t("outbox"), "Item": {
                "seq": {"N": str(n - len(emits) + 1 + i)}, "target_id": {"S": target},
                "event": {"S": json.dumps(event)}}}})
    db.transact_write_items(TransactItems=items)


done = []
for _ in range(12):
    exe = execution("invoice")
    commit(exe)
    exe["status"] = "RUNNING"
    commit(exe)
    exe["status"], exe["outcome"] = "DONE", "paid"
    commit(exe)
    done.append(exe["id"])

stuck = execution("order")
commit(stuck)
stuck["status"], stuck["active_path"] = "RUNNING", "main.awaiting_payment"
commit(stuck)

running = []
for _ in range(8):
    exe = execution("order")
    commit(exe)
    exe["status"] = "RUNNING"
    commit(exe)
    running.append(exe["id"])

# The payment service's execution tells the stuck order it was paid: an outbox row to it.
payer = execution("payment")
commit(payer)
payer["status"] = "RUNNING"
commit(payer, emits=[(stuck["id"], "payment.received")])

# A row another tool wrote that no reader can take as an execution.
db.put_item(TableName=t("executions"), Item={
    "id": {"S": "broken-row"}, "data": {"S": "{not json"}, "version": {"N": "3"},
    "definition_id": {"S": "order"}})

print(json.dumps({"stuck": stuck["id"], "payer": payer["id"], "running": running, "done": done}))
