-- local_path(ref): a blob reference (blob:<sha256>) as the path of its file in the local blob store, whose folder
-- the warehouse handle sets as the variable aesforge_blob_root (LocalBlobStore's layout: <root>/ab/cd/<sha256>);
-- the reference itself when no local folder is set (an S3 store, or a handle opened without it).
CREATE OR REPLACE MACRO local_path(ref) AS
    CASE WHEN starts_with(ref, 'blob:') AND getvariable('aesforge_blob_root') IS NOT NULL
         THEN concat_ws('/', getvariable('aesforge_blob_root'), substr(ref, 6, 2), substr(ref, 8, 2), substr(ref, 6))
         ELSE ref END;

-- critique_audit_summary: the audit figures per round, overall ('all') and per domain. Rates are over
-- pairs with enough reviews; no_blocking_rate is the share no reviewer flagged as blocking.
--   aesforge sql "SELECT * FROM critique_audit_summary"
CREATE OR REPLACE VIEW critique_audit_summary AS
SELECT audit_round, scope, acceptance_rule, n_sampled, n_decided, n_reviewers, n_reviews,
       round(100 * acceptance_rate, 1) AS acceptance_pct,
       round(100 * no_blocking_rate, 1) AS no_blocking_pct,
       round(100 * non_blocking_rate, 1) AS non_blocking_pct,
       round(100 * pairwise_agreement, 1) AS pairwise_agreement_pct
FROM critique_audit_figure
ORDER BY audit_round, scope <> 'all', scope;

-- critique_audit_outcome: per audited pair, what the reviewers decided over all rounds (a pair rejected
-- in any round counts as rejected); pairs not yet decided are absent.
CREATE OR REPLACE VIEW critique_audit_outcome AS
SELECT pair_id,
       bool_and(accepted) AS accepted,
       sum(n_reviews) AS n_reviews,
       sum(n_blocking_flags) AS n_blocking_flags,
       list(audit_round ORDER BY audit_round) AS rounds
FROM critique_audit_decision
WHERE accepted IS NOT NULL
GROUP BY pair_id;

-- llava_conversation(instruction, response): one instruction-response pair as the two turns LLaVA-style trainers
-- read, the image placeholder before the instruction; the compact export and the release's conversations config
-- both build their turns with it.
CREATE OR REPLACE MACRO llava_conversation(instruction, response) AS
    [{'from': 'human', 'value': '<image>' || chr(10) || instruction}, {'from': 'gpt', 'value': response}];

-- critique_canvas_records: the CritiqueCanvas dataset, one instruction–response pair per row, as
-- exported: verifier-accepted pairs of complete groups that have a split and were not rejected by the
-- human audit. provenance carries what the record came from and is never meant as model input. image is the kept
-- record's original file; image_sha256 names its normalised pixels (image.pixel_sha256), which the release
-- publishes as a PNG encoded at export time.
CREATE OR REPLACE VIEW critique_canvas_records AS
SELECT
    p.pair_id AS id,
    local_path(b.blob_uri) AS image,
    i.pixel_sha256 AS image_sha256,
    p.domain,
    CAST(json_extract_string(g.plan, '$[*].dimension') AS VARCHAR[]) AS selected_dimensions,
    p.dimension,
    p.improvement,
    p.question AS instruction,
    p.answer AS response,
    p.group_id AS conversation_group,
    p.pair_index AS turn,
    s.split,
    {
        'pool_item_id': p.pool_item_id,
        'image_id': m.image_id,
        'duplicate_cluster': m.cluster_id,
        'source_url': r.source_url,
        'title': r.title,
        'creator': r.creator,
        'provider': r.provider,
        'license': r.license,
        'redistribution': r.redistribution,
        'chain_digest': g.chain_digest,
        'planner': {'provider': pc.provider, 'model': pc.model, 'template_version': pc.template_version,
                    'calls': from_json(g.planner_calls, '["VARCHAR"]')},
        'annotator': {'provider': ac.provider, 'model': ac.model, 'template_version': ac.template_version,
                      'calls': from_json(g.annotator_calls, '["VARCHAR"]')},
        'verifier': {'provider': vc.provider, 'model': vc.model, 'template_version': vc.template_version,
                     'calls': from_json(g.verifier_calls, '["VARCHAR"]'),
                     'instruction_consistency': p.instruction_consistency, 'visual_grounding': p.visual_grounding,
                     'response_quality': p.response_quality,
                     'non_blocking_issues': from_json(p.non_blocking_issues, '["VARCHAR"]')},
        'audit': {'rounds': o.rounds, 'n_reviews': o.n_reviews, 'accepted': o.accepted},
        'split_seed': s.seed,
        'activity_id': p.activity_id,
        'run_id': a.run_id
    } AS provenance
FROM critique_pair p
JOIN critique_group g USING (group_id)
JOIN critique_split s USING (group_id)
JOIN pool_member m ON m.pool_item_id = p.pool_item_id AND m.is_representative
JOIN image i ON i.image_id = m.image_id
JOIN record_file f ON f.record_id = m.record_id
JOIN file_blob b ON b.sha256 = f.file_sha256
JOIN source_record r ON r.record_id = m.record_id
JOIN activity a ON a.activity_id = p.activity_id
LEFT JOIN model_call pc ON pc.call_id = json_extract_string(g.planner_calls, '$[0]')
LEFT JOIN model_call ac ON ac.call_id = json_extract_string(g.annotator_calls, '$[0]')
LEFT JOIN model_call vc ON vc.call_id = json_extract_string(g.verifier_calls, '$[0]')
LEFT JOIN critique_audit_outcome o ON o.pair_id = p.pair_id
WHERE p.accepted AND g.status = 'complete' AND coalesce(o.accepted, TRUE);
