"""Commits executions as the Python harel store (the seed) does, at a steady rate.

    python3 seed_commits.py --endpoint URL --prefix P --executions N --rate R --seconds S

Inserts N executions (the seed's whole-item Put conditioned on attribute_not_exists(id)), then
commits them in turn (the seed's whole-item Put, one TransactWriteItems conditioned on the old
version, no other row) R times a second for S seconds in all, inserts included. Uses
seed_writer.py's commit(), so the items are exactly the seed's. Region AWS_REGION (another
DynamoDB Local database), credentials as seed_writer.py. Prints one JSON object: the executions
and their last versions, the commits made and the seconds they took.
"""

import argparse
import json
import os
import sys
import threading
import time

import boto3

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_writer import commit, new_execution  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--executions", type=int, default=100)
    parser.add_argument("--rate", type=float, default=100, help="commits a second")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()

    t = lambda name: f"{args.prefix}_{name}"  # noqa: E731
    total = int(args.rate * args.seconds)
    exes = [new_execution() for _ in range(args.executions)]
    # Commit k goes to execution k % N: one thread per execution subset, so each execution's
    # commits are in order (each conditioned on the version before).
    lock = threading.Lock()
    done = [0]
    start = time.monotonic()

    def run(lane: int) -> None:
        db = boto3.client(
            "dynamodb",
            endpoint_url=args.endpoint,
            region_name=os.environ.get("AWS_REGION") or "us-east-1",
            aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID") or "test",
            aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY") or "test",
        )
        wrote = {"executions": [], "outbox": [], "spawns": [], "timers": {}, "processed": []}
        for k in range(lane, total, args.threads):
            due = start + k / args.rate
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            exe = exes[k % args.executions]
            commit(db, t, exe, wrote, emits=0, spawns=0, timers=0, mark=False)
            with lock:
                done[0] += 1

    if args.executions % args.threads:
        raise SystemExit("--executions must be a multiple of --threads")
    lanes = [threading.Thread(target=run, args=(i,)) for i in range(args.threads)]
    for lane in lanes:
        lane.start()
    for lane in lanes:
        lane.join()
    print(json.dumps({
        "executions": [{"id": e["id"], "version": e["version"], "status": e["status"]}
                       for e in exes],
        "commits": done[0],
        "seconds": round(time.monotonic() - start, 3),
    }))


if __name__ == "__main__":
    main()
