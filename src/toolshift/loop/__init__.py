"""The loop: an agent deployed behind the gateway on an evolving ecosystem, learning from its own recordings.

`toolshift loop BUILD --model M --out DIR` serves a build's test tasks version by version through the
gateway (version, record, steward and flows middleware); after each version Steward maintains its library
from the recordings judged successful, flows are learned anew for the next version, and failed tasks seed
task evolution whose solved children train Steward too. `toolshift.loop.run` runs it (resumable),
`toolshift.loop.results` scores it and writes the page. See docs/usage.md ("The loop").
"""
