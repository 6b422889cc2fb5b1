-- photocritique_selection_flow: the benchmark's selection flow, one row per (unit, reason) in the
-- order the filters apply; `entering` is how many posts or comments reached that step and `n` how
-- many left there (or, for the last rows, were kept). Print it with:
--   aesforge sql "SELECT * FROM photocritique_selection_flow"
CREATE OR REPLACE VIEW photocritique_selection_flow AS
WITH post_steps(step, reason) AS (
    VALUES (1, 'malformed_id'), (2, 'not_found'), (3, 'post_deleted'), (4, 'post_removed'), (5, 'no_image'),
           (6, 'image_unsupported'), (7, 'image_not_local'), (8, 'image_unavailable'), (9, 'too_few_words'),
           (10, 'too_few_qualifying_comments'), (11, 'kept')
), comment_steps(step, reason) AS (
    VALUES (1, 'comment_deleted'), (2, 'comment_removed'), (3, 'not_top_level'), (4, 'moderator_notice'),
           (5, 'author_deleted'), (6, 'by_submitter'), (7, 'too_few_words'), (8, 'duplicate_comment'),
           (9, 'post_excluded'), (10, 'not_in_top_3'), (11, 'reference')
), post_counts AS (
    SELECT coalesce(reason_code, 'kept') AS reason, count(*) AS n FROM photocritique_post_decision GROUP BY ALL
    UNION ALL
    SELECT reason_code, count(*) FROM reddit_source_problem WHERE scope = 'candidates' GROUP BY ALL  -- id-list lines
), comment_counts AS (
    SELECT coalesce(reason_code, 'reference') AS reason, count(*) AS n FROM photocritique_comment_decision GROUP BY ALL
), flow AS (
    SELECT 'post' AS unit, s.step, s.reason, coalesce(c.n, 0) AS n
    FROM post_steps s LEFT JOIN post_counts c USING (reason)
    UNION ALL
    SELECT 'post', 100 + row_number() OVER (ORDER BY c.reason), c.reason, c.n
    FROM post_counts c WHERE c.reason NOT IN (SELECT reason FROM post_steps)
    UNION ALL
    SELECT 'comment', s.step, s.reason, coalesce(c.n, 0)
    FROM comment_steps s LEFT JOIN comment_counts c USING (reason)
    UNION ALL
    SELECT 'comment', 100 + row_number() OVER (ORDER BY c.reason), c.reason, c.n
    FROM comment_counts c WHERE c.reason NOT IN (SELECT reason FROM comment_steps)
)
SELECT unit, step, reason,
       CAST(sum(n) OVER (PARTITION BY unit)
            - coalesce(sum(n) OVER (PARTITION BY unit ORDER BY step ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS BIGINT) AS entering,
       n
FROM flow
ORDER BY unit DESC, step;

-- photocritique_reference_set: each kept post with its pool image and three ranked critiques.
CREATE OR REPLACE VIEW photocritique_reference_set AS
SELECT d.post_id, p.permalink, p.title, p.body, d.n_words, d.pool_item_id, d.image_record_id,
       list({'rank': r.rank, 'comment_id': r.comment_id, 'score': r.score, 'n_words': r.n_words, 'body': r.body}
            ORDER BY r.rank) AS critiques
FROM photocritique_post_decision d
JOIN reddit_post p USING (post_id)
JOIN photocritique_reference r USING (post_id)
WHERE d.status = 'kept'
GROUP BY ALL;

-- photocritique_exclusions: every excluded candidate post, comment and unusable source line, with its reason.
CREATE OR REPLACE VIEW photocritique_exclusions AS
SELECT 'post' AS unit, post_id AS item_id, post_id, reason_code, detail FROM photocritique_post_decision WHERE status = 'excluded'
UNION ALL
SELECT 'comment', comment_id, post_id, reason_code, detail FROM photocritique_comment_decision WHERE status = 'excluded'
UNION ALL
SELECT 'source:' || scope, coalesce(item_id, locator || coalesce(':' || line_no, '')), NULL, reason_code, detail
FROM reddit_source_problem;
