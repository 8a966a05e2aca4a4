"""A plain Locust ``HttpUser`` that streams with ``requests``, as most Locust users would write it.

Only the measuring differs from tokenswarm's user: ``resp.iter_lines()`` over a ``requests`` session
and ``json.loads`` per line. Prompts, records and flags are tokenswarm's, so the benchmark compares
the two clients on the same harness (``benchmarks/client_fidelity.py``).
"""

import json
import time

from locust import HttpUser, constant, events, task
from locust.exception import StopUser

from locustfiles import events as tokenswarm_events
from locustfiles.metrics import build_record
from locustfiles.records import RequestRecord
from locustfiles.sse import StreamResult

tokenswarm_events.register(events)


class PlainStreamingUser(HttpUser):
    wait_time = constant(0)

    @task
    def chat(self) -> None:
        llm = self.environment.tokenswarm
        prompt = llm.dispenser.take()
        if prompt is None:
            raise StopUser()
        record = RequestRecord(request_id=llm.next_request_id(), prompt_index=prompt.index, worker=llm.worker,
                               send_ts=time.time(), max_tokens=prompt.max_tokens)
        body = {"messages": list(prompt.messages), "max_tokens": prompt.max_tokens, "stream": True,
                "stream_options": {"include_usage": True}}
        stream = StreamResult()
        send = time.perf_counter()
        with self.client.post("/v1/chat/completions", json=body, stream=True, catch_response=True) as resp:
            for line in resp.iter_lines():
                if not line.startswith(b"data: "):
                    continue
                if line == b"data: [DONE]":
                    stream.done = True
                    break
                event = json.loads(line[6:])
                if event["choices"] and event["choices"][0]["delta"].get("content"):
                    stream.content_times.append(time.perf_counter())
                if event.get("usage"):
                    stream.usage = event["usage"]
            stream.end_time = time.perf_counter()
            resp.success()
        self.environment.events.llm_record.fire(record=build_record(record, send, stream))
