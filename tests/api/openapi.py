"""Checking answers against our own OpenAPI document (OpenAPI 3.0 → JSON Schema)."""
import copy

import jsonschema
from drf_spectacular.generators import SchemaGenerator


def _to_json_schema(node):
    if isinstance(node, list):
        return [_to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _to_json_schema(v) for k, v in node.items()}
    if node.pop("nullable", False):
        if "type" in node:
            node["type"] = [node["type"], "null"]
            if "enum" in node:
                node["enum"] = [*node["enum"], None]
        else:
            node = {"anyOf": [node, {"type": "null"}]}
    if node.get("$ref", "").startswith("#/components/schemas/"):
        node["$ref"] = "#/$defs/" + node["$ref"].rsplit("/", 1)[1]
    return node


class OpenApiDocument:
    def __init__(self):
        self.doc = SchemaGenerator().get_schema(request=None, public=True)
        self.defs = _to_json_schema(copy.deepcopy(self.doc["components"]["schemas"]))
        self._validators = {}

    def response_schema(self, path: str, method: str, status: int):
        operation = self.doc["paths"][path][method.lower()]
        response = operation["responses"].get(str(status))
        if response is None:
            return None
        content = response.get("content", {}).get("application/json")
        return None if content is None else {**_to_json_schema(content["schema"]), "$defs": self.defs}

    def check(self, path: str, method: str, status: int, body) -> None:
        """Raises if the status is undocumented or the body does not match its schema."""
        operation = self.doc["paths"][path][method.lower()]
        assert str(status) in operation["responses"], f"{method} {path}: undocumented status {status}"
        key = (path, method.lower(), status)
        if key not in self._validators:
            schema = self.response_schema(path, method, status)
            # Built once per answer kind: jsonschema.validate() would re-check the schema every call.
            self._validators[key] = None if schema is None else jsonschema.Draft202012Validator(schema)
        if self._validators[key] is not None:
            self._validators[key].validate(body)
