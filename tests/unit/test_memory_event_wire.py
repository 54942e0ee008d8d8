"""The wire form of the memory and canonization events is pinned (ADR 0059): events whose
dict fields became typed records decode from and re-encode to the very bytes the log holds.

Each literal was captured from the WAL of a real workspace written by the code before the
records (the integration tests of memory writes, recall and jobs; one derive and one action of
each shape, outcomes with and without an action node, possibly superseded pairs and
replacement candidates, cycles with promotions and a supersession demotion, sweeps), plus one
outcome whose second candidate carries the `merged` and `newer` keys the log writes only when
true.
"""

from __future__ import annotations

import orjson
import pytest

from lcg.domain.events import (
    ConceptsCanonized,
    EventCodec,
    GcSwept,
    MemoryWriteAccepted,
    MemoryWriteApplied,
)
from lcg.domain.memory.records import (
    ActionRequest,
    CanonHop,
    Collected,
    DeriveRequest,
    SweepFigures,
    WriteOutcome,
)

CODEC = EventCodec()

LITERALS: tuple[tuple[str, bytes], ...] = (
    (
        "memory_write_accepted",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T00:00:03+00:00","receipt":"lwr1.0315a2321bb5'
            b'712d.19b76dab7a0.1","agent_id":"agent-a","tool":"lambo_derive","request":{"con'
            b'cepts":[{"content":"A holds","concept_type":"logic","depends_on":[],"against":'
            b'[]}],"parent_of":[]},"event_time":null}'
        ),
    ),
    (
        "memory_write_accepted",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T00:00:13+00:00","receipt":"lwr1.2b8257553e78'
            b'e829.19b76dadeb0.3","agent_id":"agent-a","tool":"lambo_record_action","request'
            b'":{"action":"wrote a.txt","produces":[{"ref":"b.txt","node":null,"by":"text"}]'
            b',"modifies":[],"depends_on":[],"against":[]},"event_time":null}'
        ),
    ),
    (
        "memory_write_accepted",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T00:00:03+00:00","receipt":"lwr1.cd2e7fae8376'
            b'8fe4.19b76dab7a0.1","agent_id":"agent-a","tool":"lambo_derive","request":{"con'
            b'cepts":[{"content":"auth","concept_type":"entity","depends_on":[],"against":[]'
            b'}],"parent_of":[{"parent":"auth","child":"sessions"},{"parent":"sessions","chi'
            b'ld":"tokens"}]},"event_time":null}'
        ),
    ),
    (
        "memory_write_accepted",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T00:00:11+00:00","receipt":"lwr1.0315a2321bb5'
            b'712d.19b76dad6e0.2","agent_id":"agent-a","tool":"lambo_derive","request":{"con'
            b'cepts":[{"content":"B holds","concept_type":"logic","depends_on":[{"ref":"A ho'
            b'lds","node":"8a0d771a-4dd1-4861-8d97-9218d3d0625e","by":"content"}],"against":'
            b'[]}],"parent_of":[]},"event_time":null}'
        ),
    ),
    (
        "memory_write_accepted",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T00:00:19+00:00","receipt":"lwr1.5ff48daa46cc'
            b'8eb5.19b76daf620.3","agent_id":"agent-a","tool":"lambo_derive","request":{"con'
            b'cepts":[{"content":"users live in the users table","concept_type":"entity","de'
            b'pends_on":[],"against":[{"ref":"1f42a6d6-242d-41bb-a536-17513fcec23d","node":"'
            b'1f42a6d6-242d-41bb-a536-17513fcec23d","by":"id"}]}],"parent_of":[]},"event_tim'
            b'e":null}'
        ),
    ),
    (
        "memory_write_accepted",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T00:00:11+00:00","receipt":"lwr1.bcf61ddb9a70'
            b'a2e3.19b76dad6e0.2","agent_id":"agent-a","tool":"lambo_record_action","request'
            b'":{"action":"created migrations/003.sql","produces":[{"ref":"migrations/003.sq'
            b'l","node":null,"by":"text"}],"modifies":[],"depends_on":[{"ref":"user schema",'
            b'"node":"53008c2a-cbd1-4cfd-ad39-1a0d35ac6583","by":"content"}],"against":[]},"'
            b'event_time":null}'
        ),
    ),
    (
        "memory_write_applied",
        (
            '{"_v":1,"occurred_at":"2026-01-01T00:00:06+00:00","receipt":"lwr1.0315a2321bb5'
            '712d.19b76dab7a0.1","intent_seq":1,"outcome":{"agent_id":"agent-a","about_time'
            '":"2026-01-01T00:00:03+00:00","interaction":"453e0925-14fc-4daf-9d5e-4d8066b6c'
            '9a6","nodes":[{"uuid":"453e0925-14fc-4daf-9d5e-4d8066b6c9a6","node_kind":"inte'
            'raction","content":"A holds","concept_type":null,"canonical_key":null,"embeddi'
            'ng_text":null},{"uuid":"8a0d771a-4dd1-4861-8d97-9218d3d0625e","node_kind":"con'
            'cept","content":"A holds","concept_type":"logic","canonical_key":"hold","embed'
            'ding_text":"A holds — A holds"}],"reinforced_nodes":[],"edges":[{"uuid":"27c75'
            '5a4-f01a-4fa2-970a-6ad9acd63871","kind":"derives","source":"453e0925-14fc-4daf'
            '-9d5e-4d8066b6c9a6","target":"8a0d771a-4dd1-4861-8d97-9218d3d0625e"}],"created'
            '":["8a0d771a-4dd1-4861-8d97-9218d3d0625e"],"matched":[],"created_count":1,"mat'
            'ched_count":0,"semantic_merged":0,"reinforced":0,"edges_count":1,"embedded":1,'
            '"summary":"derived 1 concept(s): 1 created (1 embedded), 0 matched existing"},'
            '"after_restart":false}'
        ).encode(),
    ),
    (
        "memory_write_applied",
        (
            '{"_v":1,"occurred_at":"2026-01-01T00:00:06+00:00","receipt":"lwr1.bef2f912adb7'
            '854b.19b76dab7a0.1","intent_seq":1,"outcome":{"agent_id":"agent-a","about_time'
            '":"2026-01-01T00:00:03+00:00","interaction":"518336f1-08bb-4f49-8dec-5775ba2e0'
            '63c","nodes":[{"uuid":"518336f1-08bb-4f49-8dec-5775ba2e063c","node_kind":"inte'
            'raction","content":"port is 8080","concept_type":null,"canonical_key":null,"em'
            'bedding_text":null},{"uuid":"5cd7cf61-ceb5-4013-a01e-490a6ae3817d","node_kind"'
            ':"concept","content":"port is 8080","concept_type":"observation","canonical_ke'
            'y":null,"embedding_text":"port is 8080 — port is 8080"}],"reinforced_nodes":[]'
            ',"edges":[{"uuid":"7cecc796-0204-414f-a4b8-7187a3164c74","kind":"derives","sou'
            'rce":"518336f1-08bb-4f49-8dec-5775ba2e063c","target":"5cd7cf61-ceb5-4013-a01e-'
            '490a6ae3817d"}],"created":["5cd7cf61-ceb5-4013-a01e-490a6ae3817d"],"matched":['
            '],"created_count":1,"matched_count":0,"semantic_merged":0,"reinforced":0,"edge'
            's_count":1,"embedded":1,"summary":"derived 1 concept(s): 1 created (1 embedded'
            '), 0 matched existing"},"after_restart":false}'
        ).encode(),
    ),
    (
        "memory_write_applied",
        (
            '{"_v":1,"occurred_at":"2026-01-01T00:00:14+00:00","receipt":"lwr1.05649abdec71'
            '797d.19b76dad6e0.2","intent_seq":3,"outcome":{"agent_id":"agent-a","about_time'
            '":"2026-01-01T00:00:11+00:00","interaction":"28d3124a-b77c-4d07-91ee-d98d7119a'
            '5f9","nodes":[{"uuid":"28d3124a-b77c-4d07-91ee-d98d7119a5f9","node_kind":"inte'
            'raction","content":"deploys go through the sta\u200dging cluster","concept_typ'
            'e":null,"canonical_key":null,"embedding_text":null}],"reinforced_nodes":["87b0'
            '9c43-2076-45bb-962e-1d9441c9d263"],"edges":[{"uuid":"bc1ed179-baad-4f2f-b988-4'
            'ba4b937ed97","kind":"precedes","source":"ee1b02ec-67f3-418e-8800-e04443de4305"'
            ',"target":"28d3124a-b77c-4d07-91ee-d98d7119a5f9"},{"uuid":"e8fee2f7-545b-42ea-'
            '9ac6-c470f6366923","kind":"derives","source":"28d3124a-b77c-4d07-91ee-d98d7119'
            'a5f9","target":"87b09c43-2076-45bb-962e-1d9441c9d263"}],"created":[],"matched"'
            ':["87b09c43-2076-45bb-962e-1d9441c9d263"],"created_count":0,"matched_count":1,'
            '"semantic_merged":0,"reinforced":1,"edges_count":1,"embedded":0,"summary":"der'
            'ived 1 concept(s): 0 created (0 embedded), 1 matched existing"},"after_restart'
            '":false}'
        ).encode(),
    ),
    (
        "memory_write_applied",
        (
            '{"_v":1,"occurred_at":"2026-01-01T00:00:16+00:00","receipt":"lwr1.2b8257553e78'
            'e829.19b76dadeb0.3","intent_seq":3,"outcome":{"agent_id":"agent-a","about_time'
            '":"2026-01-01T00:00:13+00:00","interaction":"c9787eff-1b4e-4218-a2c5-46c91fb6b'
            '66f","nodes":[{"uuid":"c9787eff-1b4e-4218-a2c5-46c91fb6b66f","node_kind":"inte'
            'raction","content":"wrote a.txt","concept_type":null,"canonical_key":null,"emb'
            'edding_text":null},{"uuid":"c8d4ed3a-5a0d-4060-ae85-f889f9c2e8f5","node_kind":'
            '"concept","content":"wrote a.txt","concept_type":"resource","canonical_key":"a'
            '.txt wrote","embedding_text":"wrote a.txt — wrote a.txt"},{"uuid":"701f6983-c9'
            'd2-4c36-ac95-aaaa582cba3b","node_kind":"concept","content":"b.txt","concept_ty'
            'pe":"resource","canonical_key":"b.txt","embedding_text":"b.txt — wrote a.txt"}'
            '],"reinforced_nodes":[],"edges":[{"uuid":"b4b315bb-c687-483e-8c72-ccff428c64ef'
            '","kind":"precedes","source":"448b6122-bb6e-44f7-9b42-89900d610aff","target":"'
            'c9787eff-1b4e-4218-a2c5-46c91fb6b66f"},{"uuid":"95291f1d-d010-4995-82f4-abb399'
            '87283c","kind":"derives","source":"c9787eff-1b4e-4218-a2c5-46c91fb6b66f","targ'
            'et":"c8d4ed3a-5a0d-4060-ae85-f889f9c2e8f5"},{"uuid":"3693342a-b873-4549-9ab2-3'
            '360c8b8c91d","kind":"produces","source":"c8d4ed3a-5a0d-4060-ae85-f889f9c2e8f5"'
            ',"target":"701f6983-c9d2-4c36-ac95-aaaa582cba3b"}],"created":["c8d4ed3a-5a0d-4'
            '060-ae85-f889f9c2e8f5","701f6983-c9d2-4c36-ac95-aaaa582cba3b"],"matched":[],"c'
            'reated_count":2,"matched_count":0,"semantic_merged":0,"reinforced":0,"edges_co'
            'unt":2,"embedded":2,"summary":"recorded action \'wrote a.txt\': 2 created (2 e'
            'mbedded), 0 matched existing","action_node":"c8d4ed3a-5a0d-4060-ae85-f889f9c2e'
            '8f5"},"after_restart":false}'
        ).encode(),
    ),
    (
        "memory_write_applied",
        (
            '{"_v":1,"occurred_at":"2026-01-01T00:00:14+00:00","receipt":"lwr1.52e080e9fdd6'
            'd168.19b76dad6e0.2","intent_seq":3,"outcome":{"agent_id":"agent-a","about_time'
            '":"2026-01-01T00:00:11+00:00","interaction":"3f72744d-ecef-4d08-bb50-91760dcd6'
            '423","nodes":[{"uuid":"3f72744d-ecef-4d08-bb50-91760dcd6423","node_kind":"inte'
            'raction","content":"the release pins version 2.4 of the parser","concept_type"'
            ':null,"canonical_key":null,"embedding_text":null},{"uuid":"620bfa52-fa2f-4809-'
            'a478-35e126987bd6","node_kind":"concept","content":"the release pins version 2'
            '.4 of the parser","concept_type":"logic","canonical_key":"2.4 parser pin relea'
            's version","embedding_text":"the release pins version 2.4 of the parser — the '
            'release pins version 2.4 of the parser"}],"reinforced_nodes":[],"edges":[{"uui'
            'd":"39fcdbf5-23c2-4104-aabf-9874c7b7708c","kind":"precedes","source":"18e4b6ab'
            '-bcc3-4bc5-837c-954898930a60","target":"3f72744d-ecef-4d08-bb50-91760dcd6423"}'
            ',{"uuid":"26b139a9-488e-4ff8-8e4d-764cae1ecf3c","kind":"derives","source":"3f7'
            '2744d-ecef-4d08-bb50-91760dcd6423","target":"620bfa52-fa2f-4809-a478-35e126987'
            'bd6"}],"created":["620bfa52-fa2f-4809-a478-35e126987bd6"],"matched":[],"create'
            'd_count":1,"matched_count":0,"semantic_merged":0,"reinforced":0,"edges_count":'
            '1,"embedded":1,"summary":"derived 1 concept(s): 1 created (1 embedded), 0 matc'
            "hed existing; 1 possible undeclared supersession(s) flagged; 1 replacement can"
            "didate(s): existing concepts this write may replace (nothing recorded; cite on"
            'e in against on a later call only if it really is replaced)","possibly_superse'
            'ded":[{"older":"dd0fcf42-24de-4257-903a-6526f4dd8068","newer":"620bfa52-fa2f-4'
            '809-a478-35e126987bd6"}],"replacement_candidates":{"candidates":[{"id":"dd0fcf'
            '42","node_id":"dd0fcf42-24de-4257-903a-6526f4dd8068","excerpt":"the release pi'
            'ns version 2.3 of the parser","cosine":0.988,"new_id":"620bfa52"}],"total":1},'
            '"candidate_lines":["  - dd0fcf42 \\"the release pins version 2.3 of the parser'
            '\\" (cosine 0.9880, for 620bfa52)"]},"after_restart":false}'
        ).encode(),
    ),
    (
        "memory_write_applied",
        (
            '{"_v":1,"occurred_at":"2026-01-01T00:00:14+00:00","receipt":"lwr1.52e080e9fdd6'
            'd168.19b76dad6e0.2","intent_seq":3,"outcome":{"agent_id":"agent-a","about_time'
            '":"2026-01-01T00:00:11+00:00","interaction":"3f72744d-ecef-4d08-bb50-91760dcd6'
            '423","nodes":[{"uuid":"3f72744d-ecef-4d08-bb50-91760dcd6423","node_kind":"inte'
            'raction","content":"the release pins version 2.4 of the parser","concept_type"'
            ':null,"canonical_key":null,"embedding_text":null},{"uuid":"620bfa52-fa2f-4809-'
            'a478-35e126987bd6","node_kind":"concept","content":"the release pins version 2'
            '.4 of the parser","concept_type":"logic","canonical_key":"2.4 parser pin relea'
            's version","embedding_text":"the release pins version 2.4 of the parser — the '
            'release pins version 2.4 of the parser"}],"reinforced_nodes":[],"edges":[{"uui'
            'd":"39fcdbf5-23c2-4104-aabf-9874c7b7708c","kind":"precedes","source":"18e4b6ab'
            '-bcc3-4bc5-837c-954898930a60","target":"3f72744d-ecef-4d08-bb50-91760dcd6423"}'
            ',{"uuid":"26b139a9-488e-4ff8-8e4d-764cae1ecf3c","kind":"derives","source":"3f7'
            '2744d-ecef-4d08-bb50-91760dcd6423","target":"620bfa52-fa2f-4809-a478-35e126987'
            'bd6"}],"created":["620bfa52-fa2f-4809-a478-35e126987bd6"],"matched":[],"create'
            'd_count":1,"matched_count":0,"semantic_merged":0,"reinforced":0,"edges_count":'
            '1,"embedded":1,"summary":"derived 1 concept(s): 1 created (1 embedded), 0 matc'
            "hed existing; 1 possible undeclared supersession(s) flagged; 1 replacement can"
            "didate(s): existing concepts this write may replace (nothing recorded; cite on"
            'e in against on a later call only if it really is replaced)","possibly_superse'
            'ded":[{"older":"dd0fcf42-24de-4257-903a-6526f4dd8068","newer":"620bfa52-fa2f-4'
            '809-a478-35e126987bd6"}],"replacement_candidates":{"candidates":[{"id":"dd0fcf'
            '42","node_id":"dd0fcf42-24de-4257-903a-6526f4dd8068","excerpt":"the release pi'
            'ns version 2.3 of the parser","cosine":0.988,"new_id":"620bfa52"},{"id":"dd0fc'
            'f42","node_id":"dd0fcf42-24de-4257-903a-6526f4dd8068","excerpt":"the release p'
            'ins version 2.3 of the parser","cosine":0.988,"new_id":"620bfa52","merged":tru'
            'e,"newer":true}],"total":2},"candidate_lines":["  - dd0fcf42 \\"the release pi'
            'ns version 2.3 of the parser\\" (cosine 0.9880, for 620bfa52)"]},"after_restar'
            't":false}'
        ).encode(),
    ),
    (
        "memory_accessed",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T00:00:14+00:00","counts":{"f7bea417-1c99-441'
            b'e-8ee0-8176ea501526":1}}'
        ),
    ),
    (
        "concepts_canonized",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T00:50:47+00:00","transitions":[{"node_id":"4'
            b'793aeb4-9543-404e-a6fb-b8becfa9bb94","from_status":"None","to_status":"Candida'
            b'te","blast_radius":null,"cause":"promotion","last_demotion_time":null,"superse'
            b'ded_by":null}]}'
        ),
    ),
    (
        "concepts_canonized",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T00:50:49+00:00","transitions":[{"node_id":"4'
            b'793aeb4-9543-404e-a6fb-b8becfa9bb94","from_status":"Venerable","to_status":"Ca'
            b'nonical","blast_radius":9,"cause":"promotion","last_demotion_time":null,"super'
            b'seded_by":null}]}'
        ),
    ),
    (
        "concepts_canonized",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T02:31:22+00:00","transitions":[{"node_id":"3'
            b'3cdb726-8cfe-4789-9b18-7b1ed5ac5456","from_status":"Canonical","to_status":"No'
            b'ne","blast_radius":null,"cause":"supersession","last_demotion_time":"2026-01-0'
            b'1T02:31:22+00:00","superseded_by":"37e55c3e-ac62-4121-bbcc-b882bb0b7ca6"}]}'
        ),
    ),
    (
        "concepts_canonized",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T00:50:49+00:00","transitions":[{"node_id":"4'
            b'6e73ea7-812a-4b64-8df9-854a32d71d5e","from_status":"None","to_status":"Candida'
            b'te","blast_radius":null,"cause":"promotion","last_demotion_time":null,"superse'
            b'ded_by":null},{"node_id":"9ab3826c-a8a8-4edc-8f72-ec521c756cb4","from_status":'
            b'"None","to_status":"Candidate","blast_radius":null,"cause":"promotion","last_d'
            b'emotion_time":null,"superseded_by":null},{"node_id":"9fc4a4f4-0bce-4d29-a128-d'
            b'a64c8e870c4","from_status":"None","to_status":"Candidate","blast_radius":null,'
            b'"cause":"promotion","last_demotion_time":null,"superseded_by":null},{"node_id"'
            b':"fc1d3345-c889-4c69-9281-ebf52afebb61","from_status":"Canonical","to_status":'
            b'"None","blast_radius":null,"cause":"budget","last_demotion_time":"2026-01-01T0'
            b'0:50:49+00:00","superseded_by":null}]}'
        ),
    ),
    (
        "gc_clock_started",
        (b'{"_v":1,"occurred_at":"2026-01-01T00:00:11+00:00"}'),
    ),
    (
        "gc_swept",
        (
            b'{"_v":1,"occurred_at":"2026-01-02T01:00:14+00:00","trigger":"elapsed","collect'
            b'ed":[],"deferred":[],"bumped":["0090b1bf-a1de-43fe-87ec-bbafc529fe14"],"figure'
            b's":{"collected":0,"deferred":0,"collection_cap":32,"cap_bound":false,"resource'
            b's_spared_by_dependents":0,"survivors_deferred":0},"epoch":3}'
        ),
    ),
    (
        "gc_swept",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T01:00:59+00:00","trigger":"mutations","colle'
            b'cted":[{"node_id":"a51675ba-e7f1-4d90-b17f-37996bdea73b","reason":"orphan"}],"'
            b'deferred":[],"bumped":["b9d77cd0-3060-4025-ab08-389141224cde","c4fc4bac-3f7d-4'
            b'c1b-adf8-0335b2af0399","c6d1a0f1-d838-4b35-8bd7-e92e9e57552b","c747d08d-c678-4'
            b'9d4-9676-8484485b47af","ccd46e65-2a42-4c79-ac5b-e96a252e089e","d0c65d6f-6b44-4'
            b'44a-8f34-908cc5365ab1","d41f9833-f52c-44e9-89c9-0c85ed00b862","dc46122f-d72b-4'
            b'6db-a78d-20c2db323dc9","dcec884f-fa92-42ef-a241-82eba87bcfd3","e3ce2dc5-2027-4'
            b'eb8-9180-72d7f535cb93","f4333532-a58a-4771-81c1-b8d9b6bd9495","f6a105e8-fb9e-4'
            b'5e7-b0c1-851e2408258b","0b12b574-6473-4649-9ddc-1eba3b873952","0eb9a934-7d4f-4'
            b'aaa-91c6-420d3e8b3da9","1f4fb4c3-3a64-47d2-a551-f57ebafad2bf","2b137aef-419b-4'
            b'a4e-802a-541e602cb726","35394525-87b3-49c6-8e67-59ca200a6dd0","3a7f3ff0-61ad-4'
            b'ee4-a201-91992a8e0b0c","3e2f5e4c-2525-4179-9011-a187c85b8b3c","40d0db02-e304-4'
            b'f2d-afab-0f2b9c829452","45beb7bb-3c0f-4a53-b948-1a363fb1a14a","49fbf483-20f8-4'
            b'4e5-9f98-0ab1a8ad0d5a","4d445076-701d-4bb2-97fd-d037cf9eba62","5232e5ec-0b8b-4'
            b'd2f-a121-b364eeeca835","5749b094-cdbc-424d-a785-9c00872d04b8","633b59e1-e683-4'
            b'b08-b768-8fbaa2e1b0bb","6434f6dc-1226-48bd-a551-ad01ce1f8a88","6590f1a4-3db3-4'
            b'04f-badc-2396cf8ce8a6","71182e1a-89f6-4202-9880-1fac61d54f2e","712a17e7-39aa-4'
            b'5fc-820b-24b316afcc14","767e972b-eb7b-4afc-868f-e3640d0ce479","7778cf43-04af-4'
            b'3d0-88d3-1207ff101323","8e138f92-4bd9-490f-a428-4d7648b93849","8fdc88e8-3e73-4'
            b'185-a3f4-95114178995d","b48a9327-6072-4d1c-bcfe-4dd29cf4e1cc"],"figures":{"col'
            b'lected":1,"deferred":0,"collection_cap":1,"cap_bound":false,"resources_spared_'
            b'by_dependents":0,"survivors_deferred":0},"epoch":94}'
        ),
    ),
    (
        "gc_swept",
        (
            b'{"_v":1,"occurred_at":"2026-01-01T01:00:58+00:00","trigger":"mutations","colle'
            b'cted":[{"node_id":"b24c942b-70d6-4ae3-95bd-e4573624620e","reason":"under_bar"}'
            b'],"deferred":["a51675ba-e7f1-4d90-b17f-37996bdea73b"],"bumped":["b9d77cd0-3060'
            b'-4025-ab08-389141224cde","c4fc4bac-3f7d-4c1b-adf8-0335b2af0399","c6d1a0f1-d838'
            b'-4b35-8bd7-e92e9e57552b","c747d08d-c678-49d4-9676-8484485b47af","ccd46e65-2a42'
            b'-4c79-ac5b-e96a252e089e","d0c65d6f-6b44-444a-8f34-908cc5365ab1","d41f9833-f52c'
            b'-44e9-89c9-0c85ed00b862","dc46122f-d72b-46db-a78d-20c2db323dc9","dcec884f-fa92'
            b'-42ef-a241-82eba87bcfd3","e3ce2dc5-2027-4eb8-9180-72d7f535cb93","f4333532-a58a'
            b'-4771-81c1-b8d9b6bd9495","f6a105e8-fb9e-45e7-b0c1-851e2408258b","0b12b574-6473'
            b'-4649-9ddc-1eba3b873952","0eb9a934-7d4f-4aaa-91c6-420d3e8b3da9","1f4fb4c3-3a64'
            b'-47d2-a551-f57ebafad2bf","2b137aef-419b-4a4e-802a-541e602cb726","35394525-87b3'
            b'-49c6-8e67-59ca200a6dd0","3a7f3ff0-61ad-4ee4-a201-91992a8e0b0c","3e2f5e4c-2525'
            b'-4179-9011-a187c85b8b3c","40d0db02-e304-4f2d-afab-0f2b9c829452","45beb7bb-3c0f'
            b'-4a53-b948-1a363fb1a14a","49fbf483-20f8-44e5-9f98-0ab1a8ad0d5a","4d445076-701d'
            b'-4bb2-97fd-d037cf9eba62","5232e5ec-0b8b-4d2f-a121-b364eeeca835","5749b094-cdbc'
            b'-424d-a785-9c00872d04b8","633b59e1-e683-4b08-b768-8fbaa2e1b0bb","6434f6dc-1226'
            b'-48bd-a551-ad01ce1f8a88","6590f1a4-3db3-404f-badc-2396cf8ce8a6","71182e1a-89f6'
            b'-4202-9880-1fac61d54f2e","712a17e7-39aa-45fc-820b-24b316afcc14","767e972b-eb7b'
            b'-4afc-868f-e3640d0ce479","7778cf43-04af-43d0-88d3-1207ff101323","8e138f92-4bd9'
            b'-490f-a428-4d7648b93849","8fdc88e8-3e73-4185-a3f4-95114178995d","b48a9327-6072'
            b'-4d1c-bcfe-4dd29cf4e1cc"],"figures":{"collected":1,"deferred":1,"collection_ca'
            b'p":1,"cap_bound":true,"resources_spared_by_dependents":0,"survivors_deferred":'
            b'0},"epoch":94}'
        ),
    ),
)


@pytest.mark.parametrize(("topic", "stored"), LITERALS, ids=[t for t, _ in LITERALS])
def test_a_stored_memory_event_re_encodes_to_the_same_bytes(topic: str, stored: bytes) -> None:
    event = CODEC.decode(topic, orjson.loads(stored))
    assert orjson.dumps(CODEC.encode(event)) == stored


@pytest.mark.parametrize(("topic", "stored"), LITERALS, ids=[t for t, _ in LITERALS])
def test_a_memory_event_round_trips_through_the_codec(topic: str, stored: bytes) -> None:
    event = CODEC.decode(topic, orjson.loads(stored))
    assert CODEC.decode(topic, orjson.loads(orjson.dumps(CODEC.encode(event)))) == event


def test_the_decoded_fields_are_the_typed_records() -> None:
    decoded = [CODEC.decode(topic, orjson.loads(stored)) for topic, stored in LITERALS]
    accepted = [e for e in decoded if isinstance(e, MemoryWriteAccepted)]
    assert {type(e.request) for e in accepted} == {DeriveRequest, ActionRequest}
    assert all(
        isinstance(e.request, DeriveRequest if e.tool == "lambo_derive" else ActionRequest)
        for e in accepted
    )
    applied = [e for e in decoded if isinstance(e, MemoryWriteApplied)]
    assert applied
    assert all(isinstance(e.outcome, WriteOutcome) for e in applied)
    assert any(e.outcome.action_node is not None for e in applied)
    assert any(e.outcome.possibly_superseded for e in applied)
    flagged = [
        c
        for e in applied
        if e.outcome.replacement_candidates is not None
        for c in e.outcome.replacement_candidates.candidates
    ]
    assert any(c.merged and c.newer for c in flagged)
    assert any(not c.merged and not c.newer for c in flagged)
    hops = [h for e in decoded if isinstance(e, ConceptsCanonized) for h in e.transitions]
    assert hops
    assert all(isinstance(h, CanonHop) for h in hops)
    assert any(h.last_demotion_time is not None for h in hops)
    sweeps = [e for e in decoded if isinstance(e, GcSwept)]
    assert sweeps
    assert all(isinstance(e.figures, SweepFigures) for e in sweeps)
    assert any(isinstance(c, Collected) for e in sweeps for c in e.collected)


def test_an_absent_optional_key_stays_absent_and_a_present_one_present() -> None:
    """`action_node`, `possibly_superseded`, `replacement_candidates` / `candidate_lines`,
    `merged` and `newer` are written only when the log wrote them."""
    for topic, stored in LITERALS:
        if topic != "memory_write_applied":
            continue
        sent = orjson.loads(stored)["outcome"]
        event = CODEC.decode(topic, orjson.loads(stored))
        assert isinstance(event, MemoryWriteApplied)
        again = event.outcome.to_wire()
        assert list(again) == list(sent)
        for before, after in zip(
            sent.get("replacement_candidates", {}).get("candidates", []),
            again.get("replacement_candidates", {}).get("candidates", []),
            strict=True,
        ):
            assert list(after) == list(before)
