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
        if request.get("cookie"):
            headers["HTTP_COOKIE"] = request["cookie"]
        call = getattr(client, request.get("method", "get"))

        def send(path, call=call, headers=headers, request=request):
            if "body" not in request:
                return call(path, **headers)
            body = json.dumps(request["body"])
            return call(path, data=body, content_type="application/json", **headers)

        # Warm first: first-use caches are not the steady state. A request that can be made
        # only once (payment instructions for an order) names another path to warm with.
        send(request.get("warm_path", request["path"]))
        with CaptureQueriesContext(connection) as captured:
            response = send(request["path"])
        if response.status_code >= 400:
            sys.exit(f"{request['path']} answered {response.status_code}")
        counts.append(len(captured.captured_queries))
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
