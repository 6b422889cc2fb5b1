-- poem_image_records: one row per illustration with everything the benchmark reports about it: the poem, who
-- or what made the image (a model, or a stand-in painting, labelled as such), the rubric scores (N/A answers
-- never averaged in), quality, recognizability, and the text-integrity label with its source. These are the
-- per-image means of the kept survey responses. Key: id (the illustration's item id, <poem_id>@<generator>).
-- image_sha256 is the illustration as stored in the blob store (the image the survey showed). Every column has
-- one type in every row: dimensions (mean score per rubric dimension, NULL where no rater found it applicable)
-- and n_ratings (applicable ratings per dimension) are structs with a field per dimension, in name order.
CREATE OR REPLACE VIEW poem_image_records AS
SELECT
    i.item_id AS id,
    local_path(i.image_uri) AS image,
    i.image_sha256,
    i.poem_id,
    p.title,
    p.author,
    i.generator,
    i.kind,
    i.provider,
    i.model,
    i.provider_model,
    i.prompt_template,
    json_transform(s.dimensions, '{"ai_plausibility": "DOUBLE", "artistic_style": "DOUBLE", "core_imagery": "DOUBLE",
        "cultural_coherence": "DOUBLE", "emotional_resonance": "DOUBLE", "overall_impression": "DOUBLE", "safety": "DOUBLE",
        "scene_consistency": "DOUBLE", "technical_quality": "DOUBLE", "text_integrity": "DOUBLE"}') AS dimensions,
    json_transform(s.n_ratings, '{"ai_plausibility": "INTEGER", "artistic_style": "INTEGER", "core_imagery": "INTEGER",
        "cultural_coherence": "INTEGER", "emotional_resonance": "INTEGER", "overall_impression": "INTEGER",
        "safety": "INTEGER", "scene_consistency": "INTEGER", "technical_quality": "INTEGER",
        "text_integrity": "INTEGER"}') AS n_ratings,
    s.quality,
    s.recognizability,
    s.n_raters,
    t.label AS text_integrity_label,
    t.issue AS text_issue,
    t.source AS text_label_source,
    s.text_integrity_survey,
    {'illustration': i.entity_id, 'poem': p.entity_id, 'stand_in_source': i.stand_in_source,
     'pool_record': i.pool_record_id, 'activity': i.activity_id} AS provenance
FROM poem_illustration i
JOIN poem p USING (poem_id)
LEFT JOIN poem_image_score s USING (item_id)
LEFT JOIN poem_text_label t USING (item_id);

-- poem_rater_annotations: one row per pseudonymous rater x illustration x survey item: the phase-1
-- recognizability answer (phase 'recognizability', item 'poem_choice': the letter of the poem picked, and
-- whether it is the true poem) and the ten phase-2 rubric answers (phase 'rubric', item: the dimension; the
-- option letter as the survey offered it, assets/poetry/logic/rubric.py gives its score). Key: (rater_id,
-- item_id, item). rater_id is a keyed hash of the survey's rater id (the key stays in the configuration), never
-- a name. image_sha256 is the image the rater saw: the one the survey export names, else the illustration's.
-- Every stored response is here with its quality-control outcome: passed_qc (the response counts in the
-- per-image scores), qc_reason (why not; NULL when it passed) and rater_passed_qc (the rater as a whole was
-- not excluded; a rater who passed can still have single responses left out, e.g. answered too fast).
CREATE OR REPLACE VIEW poem_rater_annotations AS
WITH response AS (
    SELECT r.*, e.reason_code AS qc_reason,
           NOT EXISTS (SELECT 1 FROM poem_survey_exclusion x WHERE x.level = 'annotator' AND x.subject = r.annotator_id)
               AS rater_passed_qc
    FROM poem_survey_response r
    LEFT JOIN poem_survey_exclusion e ON e.level = 'response' AND e.subject = r.response_id
), answer AS (
    SELECT response_id, 'recognizability' AS phase, 'poem_choice' AS item, phase1_choice AS answer,
           phase1_correct AS correct
    FROM response
    UNION ALL
    SELECT response_id, 'rubric', d.item, answers->>d.item, NULL
    FROM response, unnest(json_keys(answers)) AS d(item)
)
SELECT
    r.annotator_id AS rater_id,
    r.annotator_group AS rater_group,
    r.item_id,
    coalesce(r.image_sha256, i.image_sha256) AS image_sha256,
    i.poem_id,
    i.generator,
    a.phase,
    a.item,
    a.answer,
    a.correct,
    r.kept AS passed_qc,
    r.qc_reason,
    r.rater_passed_qc
FROM answer a
JOIN response r USING (response_id)
LEFT JOIN poem_illustration i USING (item_id);

-- poem_model_table: the per-model table (TangPoetryBench Table 2): each generator's mean per dimension over the
-- images where that dimension applies, quality and recognizability; n is the number of images behind each mean.
CREATE OR REPLACE VIEW poem_model_table AS
SELECT generator,
       max(mean) FILTER (WHERE metric = 'safety') AS safety,
       max(mean) FILTER (WHERE metric = 'technical_quality') AS technical_quality,
       max(mean) FILTER (WHERE metric = 'ai_plausibility') AS ai_plausibility,
       max(mean) FILTER (WHERE metric = 'text_integrity') AS text_integrity,
       max(mean) FILTER (WHERE metric = 'scene_consistency') AS scene_consistency,
       max(mean) FILTER (WHERE metric = 'cultural_coherence') AS cultural_coherence,
       max(mean) FILTER (WHERE metric = 'artistic_style') AS artistic_style,
       max(mean) FILTER (WHERE metric = 'core_imagery') AS core_imagery,
       max(mean) FILTER (WHERE metric = 'emotional_resonance') AS emotional_resonance,
       max(mean) FILTER (WHERE metric = 'overall_impression') AS overall_impression,
       max(mean) FILTER (WHERE metric = 'quality') AS quality,
       max(mean) FILTER (WHERE metric = 'recognizability') AS recognizability,
       max(n) FILTER (WHERE metric = 'quality') AS n_images
FROM poem_model_score
GROUP BY generator;

-- poem_survey_exclusions: every survey response left out of the scores, and why (its own quality-control
-- reason, its annotator's, or a malformed row).
CREATE OR REPLACE VIEW poem_survey_exclusions AS
SELECT 'response' AS level, r.survey_file, r.row_number, r.annotator_id, r.item_id, e.reason_code, e.detail
FROM poem_survey_response r JOIN poem_survey_exclusion e ON e.level = 'response' AND e.subject = r.response_id
UNION ALL
SELECT 'annotator', NULL, NULL, e.subject, NULL, e.reason_code, e.detail
FROM poem_survey_exclusion e WHERE e.level = 'annotator'
UNION ALL
SELECT 'malformed_row', b.survey_file, b.row_number, NULL, NULL, b.reason_code, b.detail FROM poem_survey_bad_row b;

-- context_case_status: every case read, its review outcome and the reasons (unreviewed until a sheet covers it).
CREATE OR REPLACE VIEW context_case_status AS
SELECT c.case_id, c.evaluation_id, c.n_images, c.n_options, c.gold,
       coalesce(r.status, 'unreviewed') AS status, coalesce(r.failed_criteria, []) AS failed_criteria, r.reasons, r.reviewers,
       c.locator
FROM context_case c LEFT JOIN context_retention r USING (case_id);

-- context_canvas_eval_records: what a model is given for each retained case and nothing more: the image(s),
-- the contact sheet for models that take one image, the scenario, any proposed assessment to evaluate, the
-- question and options, and the descriptions that stand in for the image under the description conditions
-- (neutral: the visible content; evidence: the same with the decisive cue named; null where the case has none).
-- No gold label, rationale, provenance or probe output.
CREATE OR REPLACE VIEW context_canvas_eval_records AS
SELECT c.evaluation_id AS id,
       (SELECT list(local_path(i.image_uri) ORDER BY i.position) FROM context_case_image i WHERE i.case_id = c.case_id) AS images,
       s.contact_sheet,
       json_extract_string(c.record, '$.scenario') AS scenario,
       json_extract_string(c.record, '$.proposed_assessment') AS proposed_assessment,
       json_extract_string(c.record, '$.question') AS question,
       (SELECT list({'id': json_extract_string(o, '$.option_id'), 'text': json_extract_string(o, '$.text')})
        FROM (SELECT unnest(json_extract(c.record, '$.options[*]')) AS o)) AS options,
       json_extract_string(c.record, '$.neutral_description') AS neutral_description,
       json_extract_string(c.record, '$.evidence_description') AS evidence_description
FROM context_case c
JOIN context_retention r USING (case_id)
LEFT JOIN (SELECT case_id, local_path(uri) AS contact_sheet FROM context_contact_sheet) s USING (case_id)
WHERE r.status = 'retained';

-- context_canvas_gold_records: the answer key and its grounds for the same retained cases, joined on id.
CREATE OR REPLACE VIEW context_canvas_gold_records AS
SELECT c.evaluation_id AS id, c.case_id, c.gold,
       json_extract_string(c.record, '$.gold_text') AS gold_text,
       json_extract_string(c.record, '$.rationale') AS rationale,
       json_extract_string(c.record, '$.source_basis') AS source_basis,
       (SELECT list({'position': i.position, 'image_sha256': i.image_sha256, 'pool_item_id': i.pool_item_id,
                     'rights': CAST(i.rights AS JSON)} ORDER BY i.position)
        FROM context_case_image i WHERE i.case_id = c.case_id) AS images,
       {'case': c.entity_id, 'locator': c.locator, 'reviewers': r.reviewers} AS provenance
FROM context_case c
JOIN context_retention r USING (case_id)
WHERE r.status = 'retained';

-- context_case_images: every stored case's images, whatever its review status, with the case's entity: what another
-- pipeline that starts from a case image reads (counterfactual edits of a case's decisive cue). pool_item_id is the
-- pool item with the image's bytes, when the pool holds one.
CREATE OR REPLACE VIEW context_case_images AS
SELECT c.case_id, c.entity_id AS case_entity_id, i.position, i.image_sha256, i.image_uri, i.pool_item_id
FROM context_case c JOIN context_case_image i USING (case_id);
