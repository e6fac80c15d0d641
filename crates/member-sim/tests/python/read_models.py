"""Reads objects returned by the API server into the Python `kubernetes` client's models.

Argument: a JSON file holding a list of objects. Each object is deserialized into its model
(`V1Pod`, `V2HorizontalPodAutoscaler`, ...) with client-side validation on, which raises when a
field Go always serializes is missing (`image`, `imageID`, ...); the model is then serialized back
and every field of the original must still be there (a field the model does not know is lost).
Prints one FAIL line per problem and a summary line.
"""

import json
import sys

from kubernetes import client


def model_name(api_version, kind):
    group, _, version = api_version.rpartition("/")
    if kind == "Event" and group == "":
        return "CoreV1Event"
    return version[0].upper() + version[1:] + kind


def lost_fields(original, kept, path):
    if isinstance(original, dict) and isinstance(kept, dict):
        for key, value in original.items():
            if key not in kept:
                # A null (Go's zero metav1.Time) is what the model keeps as None.
                if value is not None:
                    yield f"{path}.{key}"
            else:
                yield from lost_fields(value, kept[key], f"{path}.{key}")
    elif isinstance(original, list) and isinstance(kept, list):
        for index, (a, b) in enumerate(zip(original, kept)):
            yield from lost_fields(a, b, f"{path}[{index}]")


def main():
    objects = json.load(open(sys.argv[1]))
    configuration = client.Configuration()
    configuration.client_side_validation = True
    api = client.ApiClient(configuration)
    failures = 0
    for obj in objects:
        name = model_name(obj["apiVersion"], obj["kind"])
        label = f'{obj["kind"]} {obj["metadata"].get("namespace", "")}/{obj["metadata"]["name"]} rv {obj["metadata"].get("resourceVersion")}'
        if not hasattr(client.models, name):
            print(f"FAIL {label}: the Python client has no model {name}")
            failures += 1
            continue
        try:
            model = api.deserialize(json.dumps(obj), name, "application/json")
        except Exception as error:  # the models raise ValueError, TypeError
            print(f"FAIL {label}: {name} rejects it: {error}")
            failures += 1
            continue
        kept = api.sanitize_for_serialization(model)
        lost = list(lost_fields(obj, kept, ""))
        if lost:
            print(f"FAIL {label}: {name} does not know {', '.join(lost)}")
            failures += 1
    print(f"python models: {len(objects)} objects read, {failures} failed")


main()
