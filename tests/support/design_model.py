"""A stand-in for a remote vision model labelling designs behind the loopback server.

Its verdict is computed from the request: it blames the first edited element the prompt names as a prior
(with that element's box), and finds nothing wrong when the prompt names none. Answers to other schemas are
not its business.
"""

import json
import re

from tests.support.model_servers import wire_schema, wire_user_text

_PRIOR = re.compile(r"the element\(s\) \[(\d+), (\d+), (\d+), (\d+)\] \((e\d+)\)")


def remote_design_labeller(body: dict) -> str:
    name, _ = wire_schema(body)
    if name != "design_label":
        raise AssertionError(f"unexpected schema {name!r}")
    prior = _PRIOR.search(wire_user_text(body))
    if prior is None:
        return json.dumps({"flawed": False, "reason": "no edited element was named, nothing stands out", "box": None})
    box = [int(v) for v in prior.groups()[:4]]
    return json.dumps({"flawed": True, "reason": f"the edited element {prior.group(5)} disturbs the design", "box": box})
