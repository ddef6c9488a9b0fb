-- Nothing: at 000028 a database of the current line already has everything this version
-- ensures (000026's and 000027's downs remove it).
SELECT 1;
