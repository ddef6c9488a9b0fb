-- Nothing: the column this version ensures belongs to 000026 on databases that ran it (see
-- migrations/README.md); 000026's down removes it.
SELECT 1;
