-- evaluation_leaderboard: per benchmark, model, condition and metric, the mean over items with its bootstrap 95 %
-- interval (assets/evaluation), and the metrics that did not run with the reason.
--   aesforge sql "SELECT * FROM evaluation_leaderboard WHERE benchmark = 'photocritique' ORDER BY metric, mean DESC"
CREATE OR REPLACE VIEW evaluation_leaderboard AS
SELECT r.benchmark, r.model, r.condition, r.source, m.metric, m.status, s.mean, s.ci_low, s.ci_high, s.n_items,
       m.reason, m.version, r.release_digest, r.run_key
FROM evaluation_run r
JOIN evaluation_metric m USING (run_key)
LEFT JOIN evaluation_summary s ON s.run_key = m.run_key AND s.metric = m.metric;

-- evaluation_paired: the paired comparisons between two runs of one benchmark (paired bootstrap of the mean
-- difference; exact McNemar on binary metrics with its Bonferroni-adjusted p over the benchmark's pairs on that metric;
-- the paired t-test on continuous ones), with both runs' model and condition.
CREATE OR REPLACE VIEW evaluation_paired AS
SELECT a.benchmark, a.model AS model_a, a.condition AS condition_a, b.model AS model_b, b.condition AS condition_b,
       c.metric, c.n_items, c.mean_diff, c.ci_low, c.ci_high, c.mcnemar_b, c.mcnemar_c, c.mcnemar_p,
       c.mcnemar_p_adjusted, c.t_statistic, c.t_p, c.run_a, c.run_b
FROM evaluation_comparison c
JOIN evaluation_run a ON a.run_key = c.run_a
JOIN evaluation_run b ON b.run_key = c.run_b;

-- evaluation_grounding: what seeing the right image is worth (r/photocritique's grounding controls). For each run
-- under a condition with the correct image and the same model's run under that condition with a control
-- (condition+shuffled_image: Δ_S; condition+text_only: Δ_T), the paired mean of correct − control over the items
-- both scored, with its paired bootstrap 95 % interval, per metric.
--   aesforge sql "SELECT * FROM evaluation_grounding WHERE metric = 'rouge_l'"
CREATE OR REPLACE VIEW evaluation_grounding AS
WITH runs AS (
    SELECT run_key, benchmark, model, split_part(condition, '+', 1) AS base_condition,
           coalesce(nullif(split_part(condition, '+', 2), ''), 'correct_image') AS control
    FROM evaluation_run
)
SELECT c.benchmark, c.model, c.base_condition AS condition, x.control,
       CASE x.control WHEN 'shuffled_image' THEN 'delta_s' WHEN 'text_only' THEN 'delta_t' ELSE x.control END AS delta,
       p.metric, p.n_items,
       CASE WHEN p.run_a = c.run_key THEN p.mean_diff ELSE -p.mean_diff END AS correct_minus_control,
       CASE WHEN p.run_a = c.run_key THEN p.ci_low ELSE -p.ci_high END AS ci_low,
       CASE WHEN p.run_a = c.run_key THEN p.ci_high ELSE -p.ci_low END AS ci_high,
       c.run_key AS correct_run, x.run_key AS control_run
FROM runs c
JOIN runs x ON x.benchmark = c.benchmark AND x.model = c.model AND x.base_condition = c.base_condition
           AND x.control <> 'correct_image'
JOIN evaluation_comparison p ON (p.run_a = c.run_key AND p.run_b = x.run_key) OR (p.run_a = x.run_key AND p.run_b = c.run_key)
WHERE c.control = 'correct_image';

-- evaluation_answers: every answer of a closed-answer benchmark (ContextCanvas, counterfactual pairs, AesEval, poem
-- judges) as the scorer read it, with its run's model and condition; the unreadable ones carry their problem.
--   aesforge sql "SELECT model, condition, item_id, problem, detail FROM evaluation_answers WHERE problem IS NOT NULL"
CREATE OR REPLACE VIEW evaluation_answers AS
SELECT r.benchmark, r.model, r.condition, a.item_id, a.sample, a.answer, a.gold, a.correct, a.problem, a.detail,
       p.prediction, a.run_key
FROM evaluation_answer a
JOIN evaluation_run r USING (run_key)
LEFT JOIN evaluation_prediction p ON p.run_key = a.run_key AND p.item_id = a.item_id AND p.sample = a.sample;
