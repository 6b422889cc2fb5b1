-- design_latest_render: the render every question about a design shows. A design drawn by several renderer
-- versions (the renderer's code changed) is shown in the render of its latest render step.
-- Key: design_id.
CREATE OR REPLACE VIEW design_latest_render AS
SELECT r.design_id, r.renderer_version, r.png_sha256, r.png_uri, r.width, r.height
FROM design_render r JOIN activity a USING (activity_id)
QUALIFY row_number() OVER (PARTITION BY r.design_id ORDER BY a.started_at DESC, r.renderer_version DESC) = 1;

-- question_box_text(box, units): a question box as its prompt writes it: "[x1, y1, x2, y2]", whole pixels, or
-- fractions of the canvas with three decimals (assets/designs/logic/question_formats.py, _format_box).
CREATE OR REPLACE MACRO question_box_text(box, units) AS
    '[' || array_to_string(list_transform(box, lambda v: CASE WHEN units = 'pixels' THEN CAST(CAST(v AS BIGINT) AS VARCHAR)
                                                         ELSE printf('%.3f', v) END), ', ') || ']';

-- aeseval_question_rows: one row per AesEval question (aesthetic judgment, region selection, precise
-- localisation), as a model is asked it and scored on it. Key: question_id.
--   image_sha256  the render the question is about: the PNG as stored in the blob store (its blob name).
--   question      the prompt: the indicator, its definition, the task and how to reply.
--   options       what the model chooses among, as the question writes them: ["yes", "no"]; four regions, each a
--                 box "[x1, y1, x2, y2]" or "None"; [] for localisation (a free answer). option_boxes: each option's
--                 box, NULL for an option that is not a box.
--   answer        the expected reply as the prompt asks for it: "yes"/"no", a letter A-D, or a box / "None";
--                 answer_index is its position among the options, answer_box the box it names (NULL for none).
--   box_units     pixels or normalised (fractions of the canvas), as the question's step was configured; NULL for
--                 aesthetic judgment, which has no boxes.
--   metadata      the design's metadata the paper gives every question (AesEval 3.1, 5.1: layout, colour and font
--                 information in JSON), as canonical JSON text (sorted keys, no spaces): the canvas size and every
--                 element in paint order with its type, position and size in canvas pixels (left, top, width,
--                 height, angle in degrees about its centre), opacity, colour and, for text elements, the text and
--                 its font, size, alignment, spacing, capitalisation, bold and italic (NULL for other elements).
--                 Nothing that names the edit (design ids, layer files, render effects, the perturbation log).
-- Only rendered, natural designs appear (synthetic counterfactual edits live in their own table, never here).
CREATE OR REPLACE VIEW aeseval_question_rows AS
WITH question AS (
    SELECT q.*,
           list_transform(CAST(q.choices AS JSON[]),
                          lambda c: CASE WHEN json_type(c) = 'ARRAY' THEN CAST(c AS DOUBLE[]) END) AS choice_boxes,
           CASE WHEN json_type(CAST(q.answer AS JSON)) = 'ARRAY' THEN CAST(q.answer AS DOUBLE[]) END AS answer_box,
           CASE WHEN q.format <> 'aesthetic_judgment' THEN a.parameters->>'box_units' END AS box_units
    FROM design_question q JOIN activity a USING (activity_id)
), element_list AS (
    SELECT d.design_id,
           json_transform(d.record, '{"elements": [{"angle": "DOUBLE", "bold": "BOOLEAN", "capitalize": "BOOLEAN",
               "color": "INTEGER[]", "element_id": "VARCHAR", "font": "VARCHAR", "font_size": "DOUBLE", "height": "DOUBLE",
               "italic": "BOOLEAN", "left": "DOUBLE", "letter_spacing": "DOUBLE", "line_height": "DOUBLE",
               "opacity": "DOUBLE", "text": "VARCHAR", "text_align": "VARCHAR", "top": "DOUBLE", "type": "VARCHAR",
               "width": "DOUBLE"}]}').elements AS elements
    FROM design d
)
SELECT
    q.question_id,
    q.split,
    q.design_id,
    q.base_design_id,
    r.png_sha256 AS image_sha256,
    q.indicator,
    q.format,
    q.prompt AS question,
    CASE WHEN q.format = 'aesthetic_judgment' THEN CAST(q.choices AS VARCHAR[])
         ELSE list_transform(q.choice_boxes, lambda b: coalesce(question_box_text(b, q.box_units), 'None')) END AS options,
    q.choice_boxes AS option_boxes,
    CASE q.format
        WHEN 'aesthetic_judgment' THEN q.answer->>'$'
        WHEN 'region_selection' THEN chr(65 + q.answer_index)
        ELSE coalesce(question_box_text(q.answer_box, q.box_units), 'None')
    END AS answer,
    q.answer_index,
    q.answer_box,
    q.box_units,
    CAST(to_json({
        'canvas': {'height': q.canvas_height, 'width': q.canvas_width},
        'elements': list_transform(e.elements, lambda x: {
            'angle': x.angle,
            'bold': CASE WHEN x.type = 'text' THEN coalesce(x.bold, false) END,
            'capitalize': CASE WHEN x.type = 'text' THEN x.capitalize END,
            'color': x.color, 'element_id': x.element_id,
            'font': CASE WHEN x.type = 'text' THEN x.font END,
            'font_size': CASE WHEN x.type = 'text' THEN x.font_size END,
            'height': x.height,
            'italic': CASE WHEN x.type = 'text' THEN coalesce(x.italic, false) END,
            'left': x.left,
            'letter_spacing': CASE WHEN x.type = 'text' THEN x.letter_spacing END,
            'line_height': CASE WHEN x.type = 'text' THEN x.line_height END,
            'opacity': x.opacity,
            'text': CASE WHEN x.type = 'text' THEN x.text END,
            'text_align': CASE WHEN x.type = 'text' THEN x.text_align END,
            'top': x.top, 'type': x.type, 'width': x.width})
    }) AS VARCHAR) AS metadata
FROM question q
JOIN design_latest_render r USING (design_id)
JOIN element_list e USING (design_id);

-- design_question_records: the rows of the published AesEval files (aeseval_benchmark.*, aeseval_train.*): every
-- column of aeseval_question_rows, the render's path, where the label came from, and, for training questions,
-- the reasoning path of their format (judgment, selection or localisation) citing element boxes. Key: question_id. Every column has one type in every row.
CREATE OR REPLACE VIEW design_question_records AS
SELECT
    q.*,
    local_path(r.png_uri) AS image,
    {'judged_flawed': d.judged_flawed, 'label_source': d.label_source,
     'canvas': [d.canvas_width, d.canvas_height], 'renderer_version': r.renderer_version,
     'operations': (SELECT list(o.op ORDER BY o.op_index) FROM design_perturbation_op o WHERE o.design_id = q.design_id),
     'activity_id': d.activity_id} AS provenance,
    CAST(x.steps AS STRUCT(claim VARCHAR, element_box DOUBLE[], element_id VARCHAR)[]) AS reasoning
FROM aeseval_question_rows q
JOIN design_question d USING (question_id)
JOIN design_latest_render r ON r.design_id = q.design_id
LEFT JOIN design_reasoning x ON x.design_id = q.design_id AND x.indicator = q.indicator
     AND x.task = CASE q.format WHEN 'aesthetic_judgment' THEN 'judgment' WHEN 'region_selection' THEN 'selection'
                                ELSE 'localisation' END  -- assets/designs/logic/labelling.py, TASK_FORMATS
     AND x.verdict = CASE WHEN d.judged_flawed THEN 'flawed' ELSE 'good' END;

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
