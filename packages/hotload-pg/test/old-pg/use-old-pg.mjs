// `node --import tsx --import ./use-old-pg.mjs app.ts`: runs app.ts with pg = pg-old.
import { register } from 'node:module';

register('./redirect-pg.mjs', import.meta.url);
