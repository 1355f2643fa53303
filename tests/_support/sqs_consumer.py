"""Reads an SQS FIFO queue by harel's rules, for the tests of @harel/dynamodb/sqs.

read  ENDPOINT QUEUE_URL IDLE        every message, parsed by harel's Event model
                                     (pydantic 2, model_validate_json), deleted; one JSON line each
work  ENDPOINT QUEUE_URL IDLE PREFIX DYNAMODB_ENDPOINT
                                     a worker with harel's AsyncWorker._handle rules on the
                                     DynamoDB tables PREFIX_*; one JSON line per message handled

Both stop after IDLE seconds without a message.
"""

import json
import os
import sys
import time

import boto3

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harel_models import Event, Execution  # harel's pydantic models, field for field


def client(service, endpoint):
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")


def messages(sqs, url, idle, visibility=30):
    last = time.time()
    while time.time() - last < idle:
        resp = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=visibility,
                                   WaitTimeSeconds=0, AttributeNames=["All"])
        got = resp.get("Messages") or []
        if not got:
            time.sleep(0.05)
            continue
        last = time.time()
        yield got[0]


def emit(line):
    print(json.dumps(line), flush=True)


def read(endpoint, url, idle):
    sqs = client("sqs", endpoint)
    for msg in messages(sqs, url, idle):
        event = Event.model_validate_json(msg["Body"])
        emit({"group": msg["Attributes"]["MessageGroupId"],
              "dedup": msg["Attributes"].get("MessageDeduplicationId"),
              "body": msg["Body"], "redumped": event.model_dump_json(),
              "event": event.model_dump(mode="json")})
        sqs.delete_message(QueueUrl=url, ReceiptHandle=msg["ReceiptHandle"])


def work(endpoint, url, idle, prefix, endpoint_of_dynamodb, region="us-east-1"):
    """harel's worker rules (AsyncWorker._handle and engine.process for Start/Cancel), with a
    machine of one state, "main", that records every other event's kind in context.seen."""
    sqs = client("sqs", endpoint)
    db = boto3.client("dynamodb", endpoint_url=endpoint_of_dynamodb, region_name=region,
                      aws_access_key_id="test", aws_secret_access_key="test")
    for msg in messages(sqs, url, idle, visibility=2):
        group = msg["Attributes"]["MessageGroupId"]
        event = Event.model_validate_json(msg["Body"])
        ack = lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle=msg["ReceiptHandle"])
        item = db.get_item(TableName=f"{prefix}_executions", Key={"id": {"S": group}},
                           ConsistentRead=True).get("Item")
        seen = db.get_item(TableName=f"{prefix}_processed", ConsistentRead=True,
                           Key={"execution_id": {"S": group}, "event_id": {"S": event.id}}).get("Item")
        line = {"group": group, "kind": event.kind, "id": event.id}
        if item is None or seen is not None:
            ack(); emit({**line, "action": "deduped" if seen else "no-execution"}); continue
        Execution.model_validate_json(item["data"]["S"])  # as harel's DynamoDBStore.load reads it
        exe = json.loads(item["data"]["S"])
        status = exe["status"]
        if status == "CANCELLED":
            ack(); emit({**line, "action": "dropped"}); continue
        if status == "SUSPENDED":
            # harel: nack(delay=suspend_recheck) — the message comes back later
            sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=msg["ReceiptHandle"],
                                          VisibilityTimeout=1)
            emit({**line, "action": "nacked"}); continue
        if status == "CANCELLING" and event.kind != "Cancel":
            ack(); emit({**line, "action": "dropped"}); continue
        if event.kind == "Start":
            exe["context"].update(event.data)
            exe["status"], exe["active_path"] = "RUNNING", "main"
        elif event.kind == "Cancel":
            exe["status"] = "CANCELLED"  # the machine has no Cancel transition
        else:
            exe["context"].setdefault("seen", []).append(event.kind)
        exe["processed_events"] = exe.get("processed_events", 0) + 1
        old = int(item["version"]["N"])
        exe["version"] = old + 1
        try:
            db.transact_write_items(TransactItems=[
                {"Put": {"TableName": f"{prefix}_executions",
                         "Item": {"id": {"S": group}, "data": {"S": json.dumps(exe)},
                                  "version": {"N": str(old + 1)},
                                  "definition_id": {"S": exe["definition_id"]}},
                         "ConditionExpression": "version = :v",
                         "ExpressionAttributeValues": {":v": {"N": str(old)}}}},
                {"Put": {"TableName": f"{prefix}_processed",
                         "Item": {"execution_id": {"S": group}, "event_id": {"S": event.id}}}},
            ])
        except db.exceptions.TransactionCanceledException:
            sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=msg["ReceiptHandle"],
                                          VisibilityTimeout=0)
            emit({**line, "action": "conflict"}); continue
        ack(); emit({**line, "action": "processed", "status": exe["status"]})


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "read":
        read(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        work(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5], sys.argv[6], *sys.argv[7:8])
