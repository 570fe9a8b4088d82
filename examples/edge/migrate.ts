// Creates or upgrades viewsync's tables: run it once per deploy, before the new functions take
// traffic, with DATABASE_URL set (e.g. `npx tsx migrate.ts && next build` as the build command).
// A build machine has TCP sockets: postgres.js (`npm i -D postgres`) reaches Neon directly.
// Give it the same schema and tablePrefix options as the function's postgresStorage, if any.
import postgres from 'postgres';
import { postgresStorage } from 'viewsync/postgres';

const url = process.env.DATABASE_URL;
if (!url) {
  console.error('viewsync: set DATABASE_URL to the database the functions use');
  process.exit(1);
}
const sql = postgres(url, { fetch_types: false, max: 1 });
await postgresStorage(sql)
  .migrate()
  .then(
    () => console.log('viewsync: tables ready'),
    (error: Error) => {
      console.error(`viewsync: cannot create the tables: ${error.message}`);
      process.exitCode = 1;
    },
  );
await sql.end();
