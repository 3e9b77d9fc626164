"""Count the database queries of each request (JSON list on stdin), with the test client.

Run by bench/run.py with DJANGO_SETTINGS_MODULE=bench.settings; prints a JSON list.
"""

import json
import sys

import django


def main() -> None:
    django.setup()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    counts = []
    for request in json.loads(sys.stdin.read()):
        client = Client(HTTP_HOST="127.0.0.1")
        headers = {}
        if request.get("token"):
            headers["HTTP_AUTHORIZATION"] = f"Bearer {request['token']}"
        call = getattr(client, request.get("method", "get"))
        call(request["path"], **headers)  # warm: first-use caches are not the steady state
        with CaptureQueriesContext(connection) as captured:
            if "body" in request:
                response = call(
                    request["path"],
                    data=json.dumps(request["body"]),
                    content_type="application/json",
                    **headers,
                )
            else:
                response = call(request["path"], **headers)
        if response.status_code >= 400:
            sys.exit(f"{request['path']} answered {response.status_code}")
        counts.append(len(captured.captured_queries))
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
