"""The files the tool pages' examples write into their workspace before the call: the
corrections tools read a corrections file, the typing tools an ontology file
(lcg.interfaces.tool_docs)."""

from __future__ import annotations

CORRECTIONS_EXAMPLE = """corrections:
  - id: ada-person
    action: retype
    entity: Ada Lovelace
    labels: [Person, Mathematician]
  - id: engine-summary
    action: set_summary
    entity: Analytical Engine
    summary: Babbage's design for a general-purpose mechanical computer.
"""
ONTOLOGY_EXAMPLE = """relation_types:
  - name: AUTHORED
    description: A person wrote a text about a subject.
    aliases: [wrote notes on]
  - name: DESIGNED
    description: A person designed a machine or a system.
entity_types:
  - {name: Person, description: A human being.}
  - {name: Machine, description: A mechanical or computing device.}
"""
