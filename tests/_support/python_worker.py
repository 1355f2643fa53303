import sys, json, time, random, uuid, boto3
from botocore.config import Config
endpoint, prefix, ids, seconds = sys.argv[1], sys.argv[2], sys.argv[3].split(","), float(sys.argv[4])
db = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="test", aws_secret_access_key="test")
rnd = random.Random(7)
end = time.time() + seconds
commits = 0
while time.time() < end:
    eid = rnd.choice(ids)
    item = db.get_item(TableName=f"{prefix}_executions", Key={"id": {"S": eid}}, ConsistentRead=True).get("Item")
    if not item:
        time.sleep(0.01); continue
    doc = json.loads(item["data"]["S"]); old = int(item["version"]["N"]); doc["version"] = old + 1
    seq = int(db.update_item(TableName=f"{prefix}_counters", Key={"id": {"S": "outbox"}},
        UpdateExpression="ADD n :one", ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="UPDATED_NEW")["Attributes"]["n"]["N"])
    target = rnd.choice(["A", "B"])
    ev = {"id": uuid.uuid4().hex, "kind": "py", "data": {"src": eid, "n": -1, "v": old + 1}, "created_time": None, "received_time": None}
    try:
        db.transact_write_items(TransactItems=[
            {"Put": {"TableName": f"{prefix}_executions", "Item": {"id": {"S": eid}, "data": {"S": json.dumps(doc)},
                "version": {"N": str(old + 1)}, "definition_id": {"S": doc["definition_id"]}},
                "ConditionExpression": "version = :v", "ExpressionAttributeValues": {":v": {"N": str(old)}}}},
            {"Put": {"TableName": f"{prefix}_outbox", "Item": {"seq": {"N": str(seq)}, "target_id": {"S": target}, "event": {"S": json.dumps(ev)}}}},
        ])
        commits += 1
    except db.exceptions.TransactionCanceledException:
        pass
    time.sleep(0.02)
print(commits)
