import LocalDBTool

await LocalDB.runFromCommandLine()
