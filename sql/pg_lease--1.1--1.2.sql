-- pg_lease 1.1 -> 1.2: views of lease groups.
\echo Use "ALTER EXTENSION pg_lease UPDATE TO '1.2'" to load this file. \quit

-- Lease groups (the C++ group_member, client/include/pglease/group_names.hpp):
-- every lease of a group is named
--   'pglease:group/' || <group, '%' as %25 and '/' as %2F> || '/member/' || <weight> || '/' || <identity>
--   'pglease:group/' || <group, escaped alike> || '/shard/' || <shard>
-- These views take the names apart; everything else comes from lease_status.
CREATE VIEW @extschema@.lease_group_leases AS
	SELECT p.group_name, p.kind,
		   CASE WHEN p.kind = 'member' THEN substr(p.tail, length(split_part(p.tail, '/', 1)) + 2) END AS member,
		   CASE WHEN p.kind = 'member' AND split_part(p.tail, '/', 1) ~ '^([1-9][0-9]{0,2}|1000)$'
				THEN split_part(p.tail, '/', 1)::integer END AS weight,
		   CASE WHEN p.kind = 'shard' THEN p.tail END AS shard,
		   s.holder, s.epoch, s.expires_at, s.valid, s.remaining, s.name AS lease_name
	FROM @extschema@.lease_status s,
		 LATERAL (SELECT substr(s.name, 15) AS body) b,
		 LATERAL (SELECT split_part(b.body, '/', 1) AS escaped,
						 split_part(b.body, '/', 2) AS kind) k,
		 LATERAL (SELECT replace(replace(k.escaped, '%2F', '/'), '%25', '%') AS group_name,
						 k.kind,
						 substr(b.body, length(k.escaped) + length(k.kind) + 3) AS tail) p
	WHERE starts_with(s.name, 'pglease:group/')
	  AND k.escaped <> '' AND k.escaped !~ '%(?!25|2F)'
	  AND p.tail <> ''
	  AND (k.kind = 'shard'
		   OR (k.kind = 'member' AND p.tail ~ '^([1-9][0-9]{0,2}|1000)/.'));
COMMENT ON VIEW @extschema@.lease_group_leases IS
	'every lease of a lease group, its name taken apart: group, kind (member or shard), member and weight, or shard';

CREATE VIEW @extschema@.lease_group_members AS
	SELECT m.group_name, m.member, m.weight,
		   (m.valid AND m.holder = m.member) AS valid,
		   m.epoch, m.expires_at, m.remaining,
		   (SELECT count(*) FROM @extschema@.lease_group_leases sh
			 WHERE sh.kind = 'shard' AND sh.group_name = m.group_name
			   AND sh.valid AND sh.holder = m.member) AS shards,
		   m.lease_name
	FROM @extschema@.lease_group_leases m
	WHERE m.kind = 'member';
COMMENT ON VIEW @extschema@.lease_group_members IS
	'members of lease groups: valid while the membership lease is held; shards = valid shard leases the member holds';

CREATE VIEW @extschema@.lease_group_shards AS
	SELECT g.group_name, g.shard, g.holder, g.epoch, g.expires_at, g.valid, g.remaining, g.lease_name
	FROM @extschema@.lease_group_leases g
	WHERE g.kind = 'shard';
COMMENT ON VIEW @extschema@.lease_group_shards IS
	'shards of lease groups: the member holding each (valid while held and unexpired), its epoch and expiry';

GRANT SELECT ON @extschema@.lease_group_leases, @extschema@.lease_group_members,
	@extschema@.lease_group_shards TO PUBLIC;
