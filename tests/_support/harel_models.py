"""harel's pydantic models (Event, Execution), field for field as harel declares them, read from
stdin: one JSON line per document, {"model": "Event" | "Execution", "text": <JSON text>}. Prints
one JSON line each: {"ok": true, "dump": model_dump_json()} or {"ok": false, "error": ...}.

harel itself is not installed here: these mirror harel.spec.states.Event and
harel.engine.execution.Execution (pydantic 2), which is all a worker's read of a message body or
a stored document goes through (Event.model_validate_json, Execution.model_validate_json).
"""

import datetime
import json
import sys
import uuid
from enum import Enum
from typing import Optional

import pydantic


def _new_id() -> str:
    return uuid.uuid4().hex


class Event(pydantic.BaseModel):
    id: str = pydantic.Field(default_factory=_new_id)
    kind: str
    created_time: Optional[datetime.datetime] = None
    received_time: Optional[datetime.datetime] = None
    data: dict = {}


class Status(str, Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    DONE = "DONE"
    CANCELLED = "CANCELLED"
    SUSPENDED = "SUSPENDED"
    CANCELLING = "CANCELLING"
    FAILED = "FAILED"


class ChildState(pydantic.BaseModel):
    root_path: str
    finished: bool = False
    outcome: Optional[str] = None
    result: dict = {}
    submachine: bool = False
    key: str = ""


class Execution(pydantic.BaseModel):
    id: str = pydantic.Field(default_factory=_new_id)
    definition_id: str
    definition_fqn: Optional[str] = None
    root_path: str = ""
    status: Status = Status.PENDING
    outcome: Optional[str] = None
    error: Optional[str] = None
    active_path: Optional[str] = None
    history: dict = {}
    context: dict = {}
    processed_events: int = 0
    version: int = 0
    priority: int = pydantic.Field(default=0, ge=0, le=4)
    parent_id: Optional[str] = None
    child_id: Optional[str] = None
    deferred: list[Event] = []
    children: dict[str, ChildState] = {}
    invoke_seq: dict[str, int] = {}


MODELS = {"Event": Event, "Execution": Execution}

if __name__ == "__main__":
    for line in sys.stdin:
        if not line.strip():
            continue
        doc = json.loads(line)
        try:
            model = MODELS[doc["model"]].model_validate_json(doc["text"])
            print(json.dumps({"ok": True, "dump": model.model_dump_json()}), flush=True)
        except pydantic.ValidationError as error:
            print(json.dumps({"ok": False, "error": str(error)}), flush=True)
