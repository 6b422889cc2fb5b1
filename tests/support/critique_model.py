"""A stand-in for a remote vision model behind the loopback server (tests and bench/mllm_throughput.py).

It answers in the shape the request's schema asks for, and what it says depends on the image it was sent
(its overall brightness), so a cached answer for one image can never pass for another's.
"""

import io
import json
import re

from PIL import Image, ImageStat

from tests.support.model_servers import wire_images, wire_schema, wire_user_text


def _brightness_word(image_bytes: bytes) -> str:
    """Cheap on purpose (a 32-pixel thumbnail): the server answers many requests in parallel threads."""
    image = Image.open(io.BytesIO(image_bytes))
    image.draft("L", (32, 32))
    return "bright" if ImageStat.Stat(image.convert("L").resize((32, 32))).mean[0] > 127 else "dark"


def remote_model(body: dict) -> str:
    """The loopback server's model: answers of the requested shape that describe the image it was sent."""
    name, _ = wire_schema(body)
    images = wire_images(body)
    word = _brightness_word(images[0][1]) if images else "unseen"
    if name == "plan":
        return json.dumps({"dimensions": [{"dimension": "lighting", "reason": f"the frame is {word} overall"},
                                          {"dimension": "composition", "reason": "a gradient runs left to right"}]})
    if name == "dialogue":
        pairs = [{"question": f"What stands out in point {i}?", "answer": f"The {word} tonality shapes point {i}.",
                  "dimension": "lighting", "improvement": i == 6} for i in range(1, 7)]
        return json.dumps({"pairs": pairs})
    if name == "paragraphs":  # the prompt says how many: "Write the <n> instructions"
        count = int(re.search(r"Write the (\d+) instructions", wire_user_text(body)).group(1))
        return json.dumps({"paragraphs": [{"instruction": f"Write paragraph {i} on the {word} light.", "dimension": None,
                                           "response": f"The {word} tonality carries paragraph {i}."} for i in range(count)]})
    if name == "verdicts":  # the prompt says how many pairs: "all <n> pairs"
        count = int(re.search(r"all (\d+) pairs", wire_user_text(body)).group(1))
        return json.dumps({"verdicts": [{"pair": i, "instruction_consistency": True, "visual_grounding": True,
                                         "response_quality": True, "blocking_issues": [], "non_blocking_issues": []}
                                        for i in range(1, count + 1)]})
    if name == "pair_verdict":
        passed = {"pass": True, "reason": f"The answer matches the {word} image."}
        return json.dumps({"instruction_consistency": passed, "visual_grounding": passed, "response_quality": passed,
                           "issues": [], "decision": "accept", "reason": "All three criteria pass."})
    raise AssertionError(f"unexpected schema {name!r}: {wire_user_text(body)[:200]}")
