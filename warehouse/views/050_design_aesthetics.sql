-- design_question_records: every AesEval-style question as exported, with the render it asks about and
-- where the label came from. Only rendered, natural designs appear (synthetic counterfactual edits live in
-- their own table and never here).
CREATE OR REPLACE VIEW design_question_records AS
SELECT
    q.question_id AS id,
    local_path(r.png_uri) AS image,
    r.png_sha256 AS image_sha256,
    q.design_id,
    q.base_design_id,
    q.split,
    q.indicator,
    q.format,
    q.prompt,
    CAST(q.choices AS JSON) AS choices,
    CAST(q.answer AS JSON) AS answer,
    q.answer_index,
    {'judged_flawed': q.judged_flawed, 'label_source': q.label_source,
     'canvas': [q.canvas_width, q.canvas_height], 'renderer_version': r.renderer_version,
     'operations': (SELECT list(o.op ORDER BY o.op_index) FROM design_perturbation_op o WHERE o.design_id = q.design_id),
     'activity_id': q.activity_id} AS provenance,
    CASE WHEN q.format = 'aesthetic_judgment' THEN x.steps END AS reasoning   -- training paths citing element boxes
FROM design_question q
JOIN design_render r ON r.design_id = q.design_id
LEFT JOIN design_reasoning x ON x.design_id = q.design_id AND x.indicator = q.indicator AND x.task = 'judgment'
     AND x.verdict = CASE WHEN q.judged_flawed THEN 'flawed' ELSE 'good' END;

-- design_answer_balance: per split, indicator and format, how the answers are spread (yes/no, None/box,
-- and the answer's position among the choices) so a skewed benchmark is visible.
CREATE OR REPLACE VIEW design_answer_balance AS
SELECT split, indicator, format, count(*) AS n,
       count(*) FILTER (WHERE answer = '"yes"') AS n_yes,
       count(*) FILTER (WHERE answer = '"no"') AS n_no,
       count(*) FILTER (WHERE answer = 'null') AS n_none,
       count(*) FILTER (WHERE json_type(answer) = 'ARRAY') AS n_box,
       histogram(answer_index) AS answer_positions
FROM design_question
GROUP BY ALL
ORDER BY ALL;
