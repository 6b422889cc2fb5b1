-- Reddit ingestion names dump files and id lists relative to the warehouse's root, like every other reader since
-- migration 0015 (issue 14): the ids of sources, observations, problems, scans and id-list lines derive from those
-- names. A warehouse that holds photocritique rows is re-keyed by the next run of reddit_posts
-- (assets/photocritique/location_rekey.py), as 0015 describes.

INSERT INTO location_rekey (scope) SELECT 'photocritique'
    WHERE EXISTS (SELECT 1 FROM reddit_candidate) OR EXISTS (SELECT 1 FROM reddit_dump_scan)
       OR EXISTS (SELECT 1 FROM reddit_source_problem) OR EXISTS (SELECT 1 FROM reddit_post_observation);
