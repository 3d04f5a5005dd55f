sweep "x" { algos = { "qrita" , dataset = 
