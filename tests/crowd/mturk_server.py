"""A real HTTP server on 127.0.0.1 that answers MTurk's requester API (the JSON 1.1 protocol botocore speaks) for the
calls publishing makes, and records each call. Another process (a Celery worker) reaches it by setting
FINEGRAIN_MTURK_SANDBOX_ENDPOINT / FINEGRAIN_MTURK_ENDPOINT to its URL: the endpoint is a setting, so the real boto3
client and botocore's request signing and error parsing run unchanged, without the network.

Like MTurk, CreateHITWithHITType honours UniqueRequestToken: a repeated token creates nothing and is refused with
`AWS.MechanicalTurk.HitAlreadyExists`, naming the existing HIT. `lose_answers` makes chosen create calls create the
HIT and then answer 500 ServiceFault, as when MTurk's answer is lost on the way.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TARGET_PREFIX = "MTurkRequesterServiceV20170117."


@dataclass
class FakeMTurk:
    create_delay: float = 0.0  # seconds each CreateHITWithHITType takes
    lose_answers: set = field(default_factory=set)  # 1-based numbers of the create calls whose answer is lost
    calls: list = field(default_factory=list)  # (operation, request body)
    hits: dict = field(default_factory=dict)  # HITId -> HIT
    tokens: dict = field(default_factory=dict)  # UniqueRequestToken -> HITId
    refused_repeats: int = 0
    lost_answers: int = 0
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, operation: str) -> int:
        with self.lock:
            return sum(1 for name, _ in self.calls if name == operation)

    def answer(self, operation: str, body: dict) -> tuple[int, dict]:
        with self.lock:
            self.calls.append((operation, body))
            number = sum(1 for name, _ in self.calls if name == operation)
        method = getattr(self, f"op_{operation}", None)
        if method is None:
            return 400, {"__type": "RequestError", "Message": f"{operation} is not served here",
                         "TurkErrorCode": "AWS.MechanicalTurk.Unsupported"}
        return method(body, number)

    def op_CreateQualificationType(self, body, number):
        with self.lock:
            qualification_id = f"3QUAL{len(self.calls):0>25}"
        return 200, {"QualificationType": {"QualificationTypeId": qualification_id, "Name": body["Name"],
                                           "QualificationTypeStatus": "Active"}}

    def op_CreateHITType(self, body, number):
        return 200, {"HITTypeId": "3HITTYPE0000000000000000000001"}

    def op_CreateHITWithHITType(self, body, number):
        time.sleep(self.create_delay)
        token = body.get("UniqueRequestToken")
        with self.lock:
            if token and token in self.tokens:
                self.refused_repeats += 1
                existing = self.tokens[token]
                return 400, {"__type": "RequestError", "TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists",
                             "Message": f'The HIT with ID "{existing}" already exists. (1700000000000)'}
            hit_id = f"3HIT{len(self.hits):0>26}"
            self.hits[hit_id] = {"HITId": hit_id, "HITTypeId": body["HITTypeId"],
                                 "RequesterAnnotation": body.get("RequesterAnnotation", ""),
                                 "MaxAssignments": body["MaxAssignments"]}
            if token:
                self.tokens[token] = hit_id
            if number in self.lose_answers:
                self.lost_answers += 1
                return 500, {"__type": "ServiceFault", "Message": "The answer was lost.",
                             "TurkErrorCode": "AWS.MechanicalTurk.ServiceFault"}
        return 200, {"HIT": {"HITId": hit_id, "HITTypeId": body["HITTypeId"]}}

    def op_ListHITs(self, body, number):
        with self.lock:
            return 200, {"HITs": list(self.hits.values()), "NumResults": len(self.hits)}


def start(state: FakeMTurk) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            operation = self.headers.get("X-Amz-Target", "").removeprefix(TARGET_PREFIX)
            status, answer = state.answer(operation, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-amz-json-1.1")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    # shutdown() waits for the loop's next poll: 0.5 s by default, at every test's end.
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return httpd
