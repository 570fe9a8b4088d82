// Runs before every test file (setupFiles): the worker is on the Node release scripts/test-lts.sh
// asked for, so a log that says "Node 24" cannot hide a run on the machine's Node.
const wanted = process.env.EXPECT_NODE_MAJOR;
const major = process.versions.node.split('.')[0];
if (wanted === undefined) throw new Error('EXPECT_NODE_MAJOR is not set: run this config through scripts/test-lts.sh');
if (major !== wanted) throw new Error(`Expected Node ${wanted}, but this test runs on Node ${process.version} (${process.execPath})`);
