module github.com/packfs/packfs

go 1.26
