// The same packages through their CommonJS type declarations (require condition).
import core = require('hotload-core');
import reconciler = require('hotload-claim-reconciler');
import hotloadKnex = require('hotload-knex');
import hotloadPg = require('hotload-pg');
import type pg = require('pg');

const source = { secretDirectory: '/var/run/secrets/db' };
export const pool: pg.Pool = new hotloadPg.Pool({ max: 2, hotload: { source } });
export const config: hotloadKnex.HotloadKnexConfig = {
  client: hotloadKnex.HotloadPgClient,
  hotload: { source },
};
export const names: string[] = [core.HOTLOAD_METRIC_NAMES.switches, ...reconciler.CLAIM_STATES];
