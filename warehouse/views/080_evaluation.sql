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
-- difference; exact McNemar on binary metrics), with both runs' model and condition.
CREATE OR REPLACE VIEW evaluation_paired AS
SELECT a.benchmark, a.model AS model_a, a.condition AS condition_a, b.model AS model_b, b.condition AS condition_b,
       c.metric, c.n_items, c.mean_diff, c.ci_low, c.ci_high, c.mcnemar_b, c.mcnemar_c, c.mcnemar_p, c.run_a, c.run_b
FROM evaluation_comparison c
JOIN evaluation_run a ON a.run_key = c.run_a
JOIN evaluation_run b ON b.run_key = c.run_b;
