-- Train / evaluation split of complete CritiqueCanvas groups (all six pairs of a group share it),
-- by duplicate cluster and balanced across domains; decided from a recorded seed.
CREATE TABLE critique_split (
    group_id        VARCHAR PRIMARY KEY,
    split           VARCHAR NOT NULL,   -- train | eval
    cluster_id      VARCHAR NOT NULL,   -- the pool's duplicate cluster of the group's image
    domain          VARCHAR NOT NULL,
    seed            INTEGER NOT NULL,
    eval_per_domain INTEGER NOT NULL,
    activity_id     VARCHAR NOT NULL
);
